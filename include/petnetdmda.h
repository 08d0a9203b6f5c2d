/*
  Nets on DMDA fields.

  A DMDA global Vec with dof = c is, on each rank, a batch of the rank's grid points with c features: the DMDA's
  interlaced degrees of freedom are PetNet's channels-last layout. A Net with input shape (c) therefore applies
  pointwise to the field with no copy (NetForward() keeps a reference to its input), and its output is a field of the
  same grid with dof = the Net's output size. This is how a simulation adds a learned term N(u; theta) to its own
  operators, e.g. a diffusion stencil + a learned reaction:

    DMDACreate2d(comm, ..., dof = 2, ..., &da);         the simulation's grid
    NetDMDASetUp(net, da);                              input shape (2), checked against the Net's layers
    NetDMDAForward(net, da, U, F);                      F = N(U) at every grid point, no copy of U
    NetDMDACreateJacobian(net, da, A, &J);              J = A + dN/dU, a MATSHELL: A the simulation's assembled
                                                        Jacobian (DMCreateMatrix), dN/dU the Net's JVP and VJP
    NetDMDATSSetRHS(ts, da, net);                       du/dt = N(u) on the grid; NetTSSetUserRHS() adds the
                                                        simulation's g(u) with its assembled Jacobian, and
                                                        TSAdjointSolve() gives dL/dtheta (petnetts.h)

  Grid-distributed convolution (a field too large for one rank), e.g. -net_layers conv2d:16:3:1:1,relu,conv2d:2:3:1:1
  on a DMDA with dof 2: NetDMDASetUp() puts a Net with windowed layers in grid mode on the DMDA (NetSetGrid(), the
  generic spatial engine of src/net/netspatial.c); each rank computes its block of the grid from the box of the input
  it reads, gathered by a halo exchange whose adjoint adds the halo back. The entry points here map a field to a field
  of the same grid, so the layers must keep the grid (stride 1 and padding D (K - 1)/2 with an odd kernel K and dilation D;
  any groups), written as for batches of (height, width, channels) images; with the same parameters, a model trained
  on zero-padded images computes the same function on a non-periodic field (a periodic one wraps around).
*/
#pragma once

#include <petnetts.h>
#include <petscdmda.h>

PETSC_EXTERN PetscErrorCode NetDMDASetUp(Net, DM);
PETSC_EXTERN PetscErrorCode NetDMDAForward(Net, DM, Vec, Vec);
PETSC_EXTERN PetscErrorCode NetDMDACreateJacobian(Net, DM, Mat, Mat *);
PETSC_EXTERN PetscErrorCode NetDMDATSSetRHS(TS, DM, Net);

PETSC_EXTERN PetscErrorCode NetConv2dSetDM(Net, DM); /* deprecated: NetDMDASetUp(), or NetSetGrid(net, NULL) */
