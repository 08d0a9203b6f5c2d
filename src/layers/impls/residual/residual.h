/* Private to src/layers/impls/residual: the data of a residual layer. */
#pragma once

#include <petnet/private/netimpl.h>

#define RESIDUAL_F 0 /* the block: y = F(x) + shortcut */
#define RESIDUAL_P 1 /* the projection shortcut, if any (identity otherwise) */

/*
  A residual layer holds its block F (and shortcut P) as inner Nets, used only as containers of layers: the inner
  layers' options, shapes and kernels. The inner Nets are never set up: they own no parameters and no workspace. The
  residual layer drives the inner kernels itself on arrays:

    theta    [theta_F, theta_P]      inner layer l of branch b at theta + poff[b][l]   (poff[b][L_b] = its end)
    buffers  [buffers_F, buffers_P]  inner layer l of branch b at buffers + boff[b][l] (the inner layers' own
                                     buffers are copies, refreshed from these around every forward pass)
    act[b][l]   [n][out_l]  output of inner layer l of branch b (the linearization point)
    dact[b][l]  [n][out_l]  its tangent (jvp) or cotangent (backward)
    dxs         [n][in]     the shortcut's input cotangent, added to dx
*/
typedef struct {
  Net           branch[2]; /* F, and P or NULL */
  PetscInt     *poff[2], *boff[2];
  PetscInt      nlocal; /* samples the workspace holds (-1: none) */
  PetscScalar  *work;   /* one allocation for act, dact and dxs */
  PetscScalar **act[2], **dact[2], *dxs;
} Layer_Residual;

PETSC_INTERN PetscErrorCode LayerForward_Residual(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerBackward_Residual(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerJVP_Residual(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_INTERN PetscErrorCode ResidualResetWorkspace(Layer);
