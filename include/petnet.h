/*
  PetNet: deep learning on PETSc.

  How the pieces fit
  ------------------
  Layer    one operator y = f(x; theta) of a registered kind (dense, relu, ...). It computes forward, backward
           (VJP: dx = J^T dy, dtheta += J_theta^T dy) and jvp (dy = J dx + J_theta dtheta) on the local batch, on
           arrays its owner hands it (its own parameter block included); it knows nothing of any Net.
  Net      a directed acyclic graph of layers built from options: a chain (-net_layers dense:256,relu,dense:10,
           residual blocks residual(F|P) included) or named nodes with their inputs (-net_graph "a = dense:64;
           b = relu; s = add <- b, a; ..."), joined by add and concat nodes; one walk over the graph does forward,
           backward and JVP. It owns the parameters as ONE distributed Vec theta, the workspace of a batch, and
           the Jacobians as MATSHELLs (NetGetJacobian, NetGetJacobianP, and per node NetGetLayerJacobian,
           NetGetLayerJacobianP): MatMult = JVP, MatMultTranspose = VJP. Those Mats are what TS (TSAdjoint), TAO
           and SLEPc consume.
  Loss     a scalar objective of the Net's output and a target (crossentropy, mse, l1), averaged over the
           global batch, with its gradient and Hessian-vector product.

  Tensors  a batch is a Vec distributed by samples; the local part is [n][h][w][c] (channels last) or [n][f].
           A PetNetLayout (petnetlayout.h) says how any tensor is split over a Cartesian grid of ranks (samples,
           space, channels; uneven, or replicated along an axis); every movement of tensor data between layouts is
           a MATSHELL with its exact adjoint: redistribute, sum-reduce, all-reduce, halo exchange.
  Parallel -net_parallel replicated: every rank computes with a full copy of theta; the broadcast theta -> copies
           and its adjoint, the sum-reduce of gradients, are one operator (NetGetParameterBroadcast). sharded: each
           node's parameters are gathered just before it runs and its gradient reduce-scattered (no full copy
           anywhere). model: dense and conv2d weights split over a P_out x P_in grid of ranks, the node built from
           those data-movement operators around its own kernel. Results do not depend on the number of ranks or
           the mode beyond round-off.
  Dataset  a source of mini-batches (idx, binary, hdf5, memory), sharded over the ranks; Trainer (petnettrainer.h)
           ties Net, Loss and Datasets to a TAO solver (PetNet's sgd, adam, adamw, rmsprop, or any TAO type).
  TS       NetTSSetRHS makes a Net the right-hand side of any TS (explicit RK or implicit theta methods) with exact
           discrete adjoints; the ode layer wraps such a TS as a layer (neural ODEs).
  Packages each class registers itself (XxxInitializePackage, in its dlregis*.c) when its first object is created;
           dependencies run one way: sys <- layers <- net <- (loss, ts, optim, data) <- trainer.
  Options  every object reads PETSc options with prefixes: layer i of a Net reads -layer<i>_..., -net_view
           prints the network, -net_test_jacobian checks its derivatives.
  Headers  this header needs PETSc's compiler flags alone. Spectrum (petnetspectrum.h: Hessian and Jacobian spectra
           with SLEPc) is not included: include it yourself and compile with SLEPc's flags too (SLEPc's
           slepc_variables, which lib/petnet/conf/petnet_variables includes, or pkg-config's SLEPc). libpetnet links
           SLEPc either way.
*/
#pragma once

#include <petnetsys.h>
#include <petnetlayer.h>
#include <petnetnet.h>
#include <petnetloss.h>
#include <petnetoptim.h>
#include <petnetts.h>
#include <petnetdmda.h>
#include <petnetdataset.h>
#include <petnettrainer.h>

/* Every package at once (each XxxCreate() initializes its own package; see src/dlregispetnet.c) */
PETSC_EXTERN PetscErrorCode PetNetInitializePackage(void);
PETSC_EXTERN PetscErrorCode PetNetInitialize(int *, char ***, const char[], const char[]);
