static const char help[] = "Times conv2d on a DMDA (grid mode, NetDMDASetUp(): the convolution of one large distributed field): run it on 1 and on 2 ranks.\n"
                           "  -bench_grid M       an M x M grid (default 1024)\n"
                           "  -bench_channels C   input = output channels (default 8)\n"
                           "  -bench_kernel K     kernel size, odd (default 3): the layer is conv2d:C:K:1:K/2\n"
                           "  -bench_repeat R     timed repetitions of each phase (default 5)\n"
                           "Phases: forward (halo exchange + the conv2d kernel on the rank's box, -layer0_conv2d_algorithm: auto takes taps,\n"
                           "one dgemm per kernel tap and row), backward (dtheta and dx, with the adjoint halo exchange), and a\n"
                           "DMGlobalToLocal halo exchange alone, for scale.\n"
                           "Ends with one line: summary: key=value ...\n"
                           "Each rank runs its block on -net_threads T threads (the summary's threads=).\n"
                           "  e.g. OPENBLAS_NUM_THREADS=1 mpiexec -n 2 bin/bench_dmconv\n"
                           "       bin/bench_dmconv -bench_grid 256 -bench_channels 16 -net_threads 2\n";

#include <petnet.h>
#include <petnetdmda.h>

/* seconds per call of phase p (0 forward, 1 backward, 2 halo exchange), the slowest rank's */
static PetscErrorCode TimePhase(Net net, DM da, Vec U, Vec Y, Vec dY, Vec dU, Vec G, PetscInt phase, PetscInt repeat, PetscReal *seconds)
{
  PetscLogDouble t0, t1;
  Vec            local = NULL;

  PetscFunctionBegin;
  if (phase == 2) PetscCall(DMGetLocalVector(da, &local));
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&t0));
  for (PetscInt r = 0; r < repeat; r++) {
    if (phase == 0)
      PetscCall(NetDMDAForward(net, da, U, Y));
    else if (phase == 1)
      PetscCall(NetBackward(net, dY, dU, G));
    else {
      PetscCall(DMGlobalToLocalBegin(da, U, INSERT_VALUES, local));
      PetscCall(DMGlobalToLocalEnd(da, U, INSERT_VALUES, local));
    }
  }
  PetscCall(PetscTime(&t1));
  *seconds = (t1 - t0) / repeat;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, seconds, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
  if (local) PetscCall(DMRestoreLocalVector(da, &local));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt    M = 1024, C = 8, K = 3, repeat = 5, m, n, threads;
  PetscMPIInt size;
  DM          da;
  Net         net;
  Vec         U, Y, dY, dU, G;
  PetscReal   tf, tb, th, flops;
  char        layers[64];

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "conv2d grid-mode benchmark", NULL);
  PetscCall(PetNetOptionsInt("-bench_grid", "Grid points per direction", NULL, M, &M, NULL));
  PetscCall(PetNetOptionsInt("-bench_channels", "Input and output channels", NULL, C, &C, NULL));
  PetscCall(PetNetOptionsInt("-bench_kernel", "Kernel size (odd)", NULL, K, &K, NULL));
  PetscCall(PetNetOptionsInt("-bench_repeat", "Timed repetitions", NULL, repeat, &repeat, NULL));
  PetscOptionsEnd();

  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, M, M, PETSC_DECIDE, PETSC_DECIDE, C, K / 2, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMDAGetInfo(da, NULL, NULL, NULL, NULL, &m, &n, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(PetscSNPrintf(layers, sizeof(layers), "conv2d:%" PetscInt_FMT ":%" PetscInt_FMT ":1:%" PetscInt_FMT, C, K, K / 2));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, layers));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetDMDASetUp(net, da));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(VecDuplicate(U, &Y));
  PetscCall(VecDuplicate(U, &dY));
  PetscCall(VecDuplicate(U, &dU));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(VecSetRandom(U, NULL));
  PetscCall(VecSetRandom(dY, NULL));

  PetscCall(TimePhase(net, da, U, Y, dY, dU, G, 0, 1, &tf)); /* warm-up */
  PetscCall(TimePhase(net, da, U, Y, dY, dU, G, 1, 1, &tb));
  PetscCall(TimePhase(net, da, U, Y, dY, dU, G, 0, repeat, &tf));
  PetscCall(NetDMDAForward(net, da, U, Y));
  PetscCall(TimePhase(net, da, U, Y, dY, dU, G, 1, repeat, &tb));
  PetscCall(TimePhase(net, da, U, Y, dY, dU, G, 2, repeat, &th));
  flops = 2.0 * M * M * K * K * C * C;
  PetscCall(PetNetGetNumThreads(&threads));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "conv2d on a DMDA, %" PetscInt_FMT "x%" PetscInt_FMT " grid, %" PetscInt_FMT " -> %" PetscInt_FMT " channels, %" PetscInt_FMT "x%" PetscInt_FMT " kernel on %d rank(s) (%" PetscInt_FMT " x %" PetscInt_FMT " blocks)\n", M, M, C,
                        C, K, K, size, m, n));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  forward  %8.2f ms  %6.2f GFLOP/s\n", 1e3 * (double)tf, (double)(flops / tf / 1e9)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  backward %8.2f ms  %6.2f GFLOP/s (dtheta and dx)\n", 1e3 * (double)tb, (double)(2 * flops / tb / 1e9)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  halo exchange alone (DMGlobalToLocal) %.3f ms\n", 1e3 * (double)th));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "summary: grid=%" PetscInt_FMT " channels=%" PetscInt_FMT " kernel=%" PetscInt_FMT " ranks=%d threads=%" PetscInt_FMT " forward_ms=%.2f backward_ms=%.2f halo_ms=%.3f forward_gflops=%.2f backward_gflops=%.2f",
                        M, C, K, size, threads, 1e3 * (double)tf, 1e3 * (double)tb, 1e3 * (double)th, (double)(flops / tf / 1e9), (double)(2 * flops / tb / 1e9)));
  { /* the BLAS's kernels (issue 31): a rate is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }

  PetscCall(VecDestroy(&U));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dU));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
