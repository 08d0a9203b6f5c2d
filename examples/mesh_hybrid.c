static const char help[] = "A hybrid reaction-diffusion model on an unstructured mesh: FitzHugh-Nagumo on a triangular DMPlex whose reaction term\n"
                           "is a small MLP applied at every vertex, trained through TSAdjointSolve and TAO (the DMPlex counterpart of bin/hybrid_rd).\n"
                           "True model on the unit square or a Gmsh mesh's domain (no-flux boundary), P1 elements with a lumped mass matrix M and stiffness K:\n"
                           "    u_t = -Du M^-1 K u + u - u^3 - k - v,    v_t = -Dv M^-1 K v + u - v\n"
                           "Mesh: the perturbed triangulation of bin/mesh_surrogate (examples/mesh_surrogate/mesh.c), distributed by PETSc's\n"
                           "partitioner; (u, v) are 2 dofs per vertex, the diffusion an assembled MPIAIJ on the DM's global layout.\n"
                           "Data: snapshots of trajectories of the true model from smooth random initial conditions (PETSc TS, rk 4).\n"
                           "Model: the same diffusion + N(u, v; theta), an MLP applied at every vertex (a vertex is a sample of shape (2)).\n"
                           "Loss: mean squared misfit at the snapshot times, each snapshot interval integrated from the observed snapshot\n"
                           "(multiple shooting; -rd_shooting 0: whole trajectories). Gradient: NetTSTimeSeriesGradient (TSSolve, then\n"
                           "TSAdjointSolve); the TS Jacobian is the assembled diffusion + the Net's Jacobian shell. Optimizer: any TAO type\n"
                           "(default lmvm). Reports the relative L2 error, over all snapshots, of the learned model's trajectories from held-out\n"
                           "initial conditions (integrated from u(0) alone). Options:\n"
                           "  -mesh_faces N          squares per side of the triangulation, 2 triangles each (default 16), then -dm_refine\n"
                           "  -mesh_file F           a 2-D triangular Gmsh mesh instead (ASCII .msh 2.2 or 4.1; e.g. share/meshes/lshape.msh)\n"
                           "  -rd_final_time T       length of a trajectory (default 2.5)\n"
                           "  -rd_snapshots S        snapshots per trajectory, evenly spaced in (0, T] (default 5)\n"
                           "  -rd_train N            training trajectories (default 4)\n"
                           "  -rd_test N             held-out trajectories (default 4), from initial conditions the training never sees\n"
                           "  -rd_amplitude A        size of the random initial conditions (default 0.5)\n"
                           "  -rd_Du, -rd_Dv, -rd_k  the true model's coefficients (default 1e-3, 5e-3, 5e-3)\n"
                           "  -rd_test_jacobian      check the coupled Jacobian and the parameter Jacobian (dot-product, finite differences)\n"
                           "  -rd_monitor K          print the loss every K iterations (default 10; 0: never)\n"
                           "The MLP is -net_layers (default dense:16,tanh,dense:2; with graph layers, e.g. sage:16,tanh,dense:2, a non-local\n"
                           "term on the mesh's vertex graph), the integrator -ts_* (default rk 4 with the largest stable\n"
                           "step that divides the snapshot interval), the optimizer -tao_* (default lmvm, 60 iterations).\n"
                           "Ends with one line: summary: key=value ...\n";

#include <petnet.h>
#include <petnetoptim.h>
#include <petsctao.h>
#include "mesh_surrogate/mesh.h"
#include "hybrid/fit.h"

/*
  Every simulation here is P independent copies of the problem on one mesh (the diffusion couples no copies): a DM
  with 2 P dofs per vertex, [vertex][copy][u, v] on each rank; the Net's batch is P x (owned vertices) samples of shape
  (2). The training machinery is examples/hybrid/fit.c; this file gives it the grid (HybridGridOps).
*/
typedef struct {
  HybridProblem hp; /* the settings shared with examples/hybrid/fit.c; hp.ctx is this AppCtx */
  PetscInt      faces;
  char          file[PETSC_MAX_PATH_LEN]; /* -mesh_file: a Gmsh mesh instead of the built-in square */
  PetscInt      ntest;
  PetscBool     testjac;
  MeshProblem   mp; /* the distributed mesh, one dof per vertex: its stiffness K (k = 1) and lumped mass */
  Mat           L;  /* -M^-1 K: the lumped-mass P1 Laplacian on one scalar field (rows of the DM's global section) */
} AppCtx;

/* The mesh and the scalar Laplacian L = -M^-1 K (no-flux boundary: the rows of K sum to zero) */
static PetscErrorCode MeshCreate(AppCtx *app)
{
  Vec mass;

  PetscFunctionBegin;
  /* K = 1 mode, sigma = 0, famp = 0: the stiffness with k = 1 and the load with f = 1, i.e. the lumped mass */
  PetscCall(MeshProblemCreate(PETSC_COMM_WORLD, app->file, app->faces, 1, 0.0, 0.0, &app->mp));
  PetscCall(MatDuplicate(app->mp.A, MAT_COPY_VALUES, &app->L));
  PetscCall(VecDuplicate(app->mp.b, &mass));
  PetscCall(VecCopy(app->mp.b, mass));
  PetscCall(VecReciprocal(mass));
  PetscCall(VecScale(mass, -1.0));
  PetscCall(MatDiagonalScale(app->L, mass, NULL));
  PetscCall(VecDestroy(&mass));
  PetscFunctionReturn(0);
}

static PetscErrorCode MeshDestroy(AppCtx *app)
{
  PetscFunctionBegin;
  PetscCall(MatDestroy(&app->L));
  PetscCall(MeshProblemDestroy(&app->mp));
  PetscFunctionReturn(0);
}

/* max_i sum_j |L_ij| (Gershgorin: a bound on the spectral radius of L) */
static PetscErrorCode LaplacianBound(Mat L, PetscReal *bound)
{
  PetscInt  rs, re;
  PetscReal mx = 0;

  PetscFunctionBegin;
  PetscCall(MatGetOwnershipRange(L, &rs, &re));
  for (PetscInt i = rs; i < re; i++) {
    const PetscScalar *v;
    PetscInt           nc;
    PetscReal          s = 0;

    PetscCall(MatGetRow(L, i, &nc, NULL, &v));
    for (PetscInt j = 0; j < nc; j++) s += PetscAbsScalar(v[j]);
    PetscCall(MatRestoreRow(L, i, &nc, NULL, &v));
    mx = PetscMax(mx, s);
  }
  PetscCall(MPIU_Allreduce(&mx, bound, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
  PetscFunctionReturn(0);
}

/*
  The DM of P copies: the mesh's DM with 2 P dofs per vertex. Its global section numbers the owned vertices in the same
  order as the scalar one, so dof (vertex g, copy s, field c) is global row 2 P g + 2 s + c, g the vertex's row of L.
  A = L (x) I_P (x) diag(Du, Dv) assembled on those rows.
*/
static PetscErrorCode GridCreate(HybridGrid *grid)
{
  AppCtx        *app = (AppCtx *)grid->problem->ctx;
  const PetscInt bs  = 2 * grid->P;
  MeshProblem   *mp  = &app->mp;
  PetscSection   sec, gsec, gsec1;
  PetscInt       pStart, pEnd, rs, re, *dnz, *onz;

  PetscFunctionBegin;
  PetscCall(DMClone(mp->dm, &grid->dm));
  PetscCall(DMPlexGetChart(grid->dm, &pStart, &pEnd));
  PetscCall(PetscSectionCreate(PETSC_COMM_WORLD, &sec));
  PetscCall(PetscSectionSetChart(sec, pStart, pEnd));
  for (PetscInt v = mp->vStart; v < mp->vEnd; v++) PetscCall(PetscSectionSetDof(sec, v, bs));
  PetscCall(PetscSectionSetUp(sec));
  PetscCall(DMSetLocalSection(grid->dm, sec));
  PetscCall(PetscSectionDestroy(&sec));
  PetscCall(DMGetGlobalSection(grid->dm, &gsec));
  PetscCall(DMGetGlobalSection(mp->dm, &gsec1));
  for (PetscInt v = mp->vStart; v < mp->vEnd; v++) {
    PetscInt g, g1;

    PetscCall(PetscSectionGetOffset(gsec, v, &g));
    PetscCall(PetscSectionGetOffset(gsec1, v, &g1));
    if (g1 >= 0) PetscCheck(g == bs * g1, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Vertex %" PetscInt_FMT ": global offset %" PetscInt_FMT " with %" PetscInt_FMT " dofs, not %" PetscInt_FMT " x %" PetscInt_FMT, v, g, bs, bs, g1);
  }

  PetscCall(MatGetOwnershipRange(app->L, &rs, &re));
  PetscCall(PetscMalloc2(bs * (re - rs), &dnz, bs * (re - rs), &onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt *cols;
    PetscInt        nc, nd = 0;

    PetscCall(MatGetRow(app->L, i, &nc, &cols, NULL));
    for (PetscInt j = 0; j < nc; j++) nd += cols[j] >= rs && cols[j] < re;
    for (PetscInt d = 0; d < bs; d++) {
      dnz[bs * (i - rs) + d] = nd;
      onz[bs * (i - rs) + d] = nc - nd;
    }
    PetscCall(MatRestoreRow(app->L, i, &nc, &cols, NULL)); /* sets nc to 0 */
  }
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, bs * (re - rs), bs * (re - rs), PETSC_DETERMINE, PETSC_DETERMINE, 0, dnz, 0, onz, &grid->A));
  PetscCall(PetscFree2(dnz, onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscInt           nc, *bcols;
    PetscScalar       *bvals;

    PetscCall(MatGetRow(app->L, i, &nc, &cols, &vals));
    PetscCall(PetscMalloc2(nc, &bcols, nc, &bvals));
    for (PetscInt d = 0; d < bs; d++) {
      const PetscReal D   = d % 2 ? app->hp.Dv : app->hp.Du;
      PetscInt        row = bs * i + d;

      for (PetscInt j = 0; j < nc; j++) {
        bcols[j] = bs * cols[j] + d;
        bvals[j] = D * vals[j];
      }
      PetscCall(MatSetValues(grid->A, 1, &row, nc, bcols, bvals, INSERT_VALUES));
    }
    PetscCall(PetscFree2(bcols, bvals));
    PetscCall(MatRestoreRow(app->L, i, &nc, &cols, &vals));
  }
  PetscCall(MatAssemblyBegin(grid->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(grid->A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/*
  Copy s of U gets the initial condition of trajectory traj[s]: each component is, with (x', y') = (2x - 1, 2y - 1),
    amplitude sum_{|kx|,|ky| <= 2} (a cos(pi (kx x' + ky y')) + b sin(pi (kx x' + ky y'))) / (1 + kx^2 + ky^2)
  (bin/hybrid_rd's fields on [-1,1]^2 mapped to the unit square), a, b uniform in [-1, 1] from a stream seeded by the
  trajectory number, evaluated at the vertices' coordinates: the same field on any number of ranks and any partition.
*/
static PetscErrorCode InitialConditions(HybridGrid *grid, const PetscInt traj[], Vec U)
{
  const PetscInt K = 2, nk = 2 * K + 1, P = grid->P;
  AppCtx        *app = (AppCtx *)grid->problem->ctx;
  PetscScalar   *u;
  PetscRandom    rnd;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(VecGetArrayWrite(U, &u));
  for (PetscInt s = 0; s < P; s++) {
    PetscReal coef[2][5][5][2];

    PetscCall(PetscRandomSetSeed(rnd, 1000 + (unsigned long)traj[s]));
    PetscCall(PetscRandomSeed(rnd));
    for (PetscInt c = 0; c < 2; c++)
      for (PetscInt a = 0; a < nk; a++)
        for (PetscInt b = 0; b < nk; b++)
          for (PetscInt q = 0; q < 2; q++) PetscCall(PetscRandomGetValueReal(rnd, &coef[c][a][b][q]));
    for (PetscInt i = 0; i < app->mp.m; i++) {
      const PetscReal x = 2 * app->mp.xy[2 * i] - 1, y = 2 * app->mp.xy[2 * i + 1] - 1;

      for (PetscInt c = 0; c < 2; c++) {
        PetscReal sum = 0.0;

        for (PetscInt a = 0; a < nk; a++)
          for (PetscInt b = 0; b < nk; b++) {
            const PetscReal kx = a - K, ky = b - K, phase = PETSC_PI * (kx * x + ky * y);

            sum += (coef[c][a][b][0] * PetscCosReal(phase) + coef[c][a][b][1] * PetscSinReal(phase)) / (1.0 + kx * kx + ky * ky);
          }
        u[2 * (P * i + s) + c] = app->hp.amplitude * sum;
      }
    }
  }
  PetscCall(VecRestoreArrayWrite(U, &u));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* dst = src on the copies s with pick[s] (same grid; [vertex][copy][u, v]) */
static PetscErrorCode CopySlices(HybridGrid *grid, const PetscBool pick[], Vec src, Vec dst)
{
  const PetscInt     P   = grid->P;
  AppCtx            *app = (AppCtx *)grid->problem->ctx;
  const PetscScalar *x;
  PetscScalar       *y;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(src, &x));
  PetscCall(VecGetArray(dst, &y));
  for (PetscInt i = 0; i < app->mp.m; i++)
    for (PetscInt s = 0; s < P; s++)
      if (pick[s]) {
        y[2 * (P * i + s)]     = x[2 * (P * i + s)];
        y[2 * (P * i + s) + 1] = x[2 * (P * i + s) + 1];
      }
  PetscCall(VecRestoreArray(dst, &y));
  PetscCall(VecRestoreArrayRead(src, &x));
  PetscFunctionReturn(0);
}

/* The Net as the right-hand side: the DM's global Vec is a batch of samples of shape (2), one per vertex and copy */
static PetscErrorCode SetNetRHS(HybridGrid *grid, Net net, TS ts)
{
  Vec u;

  PetscFunctionBegin;
  PetscCall(DMGetGlobalVector(grid->dm, &u));
  PetscCall(NetTSSetRHS(ts, net, u));
  PetscCall(DMRestoreGlobalVector(grid->dm, &u));
  PetscFunctionReturn(0);
}

static const HybridGridOps GridOps = {GridCreate, InitialConditions, CopySlices, SetNetRHS};

/*
  A Net with graph layers (e.g. -net_layers sage:16,tanh,dense:2) mixes neighbouring vertices through the mesh's graph
  operator G (the normalised vertex adjacency, on L's rows): a non-local learned term. Each simulation's P copies are
  the Net's samples in [vertex][copy] order, which the graph layers apply as G (x) I_P.
*/
static PetscErrorCode SetGraphOperator(AppCtx *app, Net net)
{
  PetscInt nl, ngraph = 0;

  PetscFunctionBegin;
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt k = 0; k < nl; k++) {
    Layer     layer;
    PetscBool isgraph;

    PetscCall(NetGetLayer(net, k, &layer));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)layer, &isgraph, "gcn", "sage", ""));
    ngraph += isgraph;
  }
  if (ngraph) PetscCall(NetSetGraphOperator(net, app->mp.G));
  PetscFunctionReturn(0);
}

/*
  -rd_test_jacobian: checks the coupled right-hand side Jacobian J = A + J_N (the assembled diffusion plus the Net's
  shell, as the TS receives it) at the training start state u, for random v, w:
    adjoint  |<J v, w> - <v, J^T w>| / (|J v| |w|)
    finite   |J v - (G(u + h v) - G(u - h v)) / (2 h)| / |J v|,  G the TS right-hand side, h = 1e-6
  and the parameter Jacobian J_theta the same way (G as a function of theta).
*/
static PetscErrorCode TestJacobian(HybridFit *fit)
{
  TS              ts = fit->ts;
  Mat             J, JP;
  Vec             u = fit->start, v, w, Jv, JTw, up, Gp, Gm, theta, p, q, JTq;
  PetscRandom     rnd;
  PetscScalar     a, b;
  PetscReal       nJv, nw, nd, adj, fd, adjp, fdp;
  const PetscReal h = 1e-6;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 5));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecDuplicate(u, &v));
  PetscCall(VecDuplicate(u, &w));
  PetscCall(VecDuplicate(u, &Jv));
  PetscCall(VecDuplicate(u, &JTw));
  PetscCall(VecDuplicate(u, &up));
  PetscCall(VecDuplicate(u, &Gp));
  PetscCall(VecDuplicate(u, &Gm));
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(VecSetRandom(w, rnd));
  PetscCall(TSSetUp(ts));
  PetscCall(TSGetRHSJacobian(ts, &J, NULL, NULL, NULL));
  PetscCall(TSComputeRHSJacobian(ts, 0.0, u, J, J));
  PetscCall(MatMult(J, v, Jv));
  PetscCall(MatMultTranspose(J, w, JTw));
  PetscCall(VecDot(Jv, w, &a));
  PetscCall(VecDot(v, JTw, &b));
  PetscCall(VecNorm(Jv, NORM_2, &nJv));
  PetscCall(VecNorm(w, NORM_2, &nw));
  adj = PetscAbsScalar(a - b) / (nJv * nw);
  PetscCall(VecWAXPY(up, h, v, u));
  PetscCall(TSComputeRHSFunction(ts, 0.0, up, Gp));
  PetscCall(VecWAXPY(up, -h, v, u));
  PetscCall(TSComputeRHSFunction(ts, 0.0, up, Gm));
  PetscCall(VecAXPY(Gp, -1.0, Gm));
  PetscCall(VecScale(Gp, 0.5 / h));
  PetscCall(TSComputeRHSJacobian(ts, 0.0, u, J, J));
  PetscCall(MatMult(J, v, Jv));
  PetscCall(VecAXPY(Gp, -1.0, Jv));
  PetscCall(VecNorm(Gp, NORM_2, &nd));
  fd = nd / nJv;

  /* the parameter Jacobian: dG/dtheta p against central differences in theta; adjoint with q */
  PetscCall(NetGetParameters(fit->net, &theta));
  PetscCall(VecDuplicate(theta, &p));
  PetscCall(VecDuplicate(theta, &JTq));
  PetscCall(VecDuplicate(u, &q));
  PetscCall(VecSetRandom(p, rnd));
  PetscCall(VecSetRandom(q, rnd));
  PetscCall(TSGetRHSJacobianP(ts, &JP, NULL, NULL));
  PetscCall(TSComputeRHSJacobianP(ts, 0.0, u, JP));
  PetscCall(MatMult(JP, p, Jv));
  PetscCall(MatMultTranspose(JP, q, JTq));
  PetscCall(VecDot(Jv, q, &a));
  PetscCall(VecDot(p, JTq, &b));
  PetscCall(VecNorm(Jv, NORM_2, &nJv));
  PetscCall(VecNorm(q, NORM_2, &nw));
  adjp = PetscAbsScalar(a - b) / (nJv * nw);
  PetscCall(VecAXPY(theta, h, p));
  PetscCall(TSComputeRHSFunction(ts, 0.0, u, Gp));
  PetscCall(VecAXPY(theta, -2 * h, p));
  PetscCall(TSComputeRHSFunction(ts, 0.0, u, Gm));
  PetscCall(VecAXPY(theta, h, p));
  PetscCall(VecAXPY(Gp, -1.0, Gm));
  PetscCall(VecScale(Gp, 0.5 / h));
  PetscCall(TSComputeRHSJacobianP(ts, 0.0, u, JP));
  PetscCall(MatMult(JP, p, Jv));
  PetscCall(VecAXPY(Gp, -1.0, Jv));
  PetscCall(VecNorm(Gp, NORM_2, &nd));
  fdp = nd / nJv;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian test: adjoint %.1e, finite difference %.1e, parameter jacobian: adjoint %.1e, finite difference %.1e\n", (double)adj, (double)fd, (double)adjp, (double)fdp));
  PetscCheck(adj < 1e-12 && fd < 1e-6 && adjp < 1e-12 && fdp < 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The coupled Jacobian failed its test (bounds: adjoint 1e-12, finite difference 1e-6)");
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&q));
  PetscCall(VecDestroy(&JTq));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&Jv));
  PetscCall(VecDestroy(&JTw));
  PetscCall(VecDestroy(&up));
  PetscCall(VecDestroy(&Gp));
  PetscCall(VecDestroy(&Gm));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  AppCtx             app;
  HybridProblem     *hp = &app.hp;
  HybridGrid         grid, gridtrain; /* the held-out trajectories, and training trajectory 0, for evaluation */
  HybridFit          fit;
  Net                net;
  TS                 truets, ts, truetrain, tstrain;
  Tao                tao;
  PetscReal          err0, errtrain, err, loss, ttrain, tsolve, bound;
  PetscInt           nparams, its, insize;
  PetscMPIInt        size;
  TaoType            taotype;
  TaoConvergedReason reason;
  PetNetShape        in;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetTaoInitializePackage()); /* PetNet's TAO types (adam, rmsprop, ...) for TaoSetType and -tao_type */
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscMemzero(&app, sizeof(app)));
  app.faces = 16;
  app.ntest = 4;
  PetscCall(HybridProblemSetDefaults(hp, &GridOps, &app));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Hybrid reaction-diffusion example on a DMPlex mesh", NULL);
  PetscCall(PetNetOptionsInt("-mesh_faces", "Squares per side of the triangulation (2 triangles each) before -dm_refine", NULL, app.faces, &app.faces, NULL));
  PetscCall(PetscOptionsString("-mesh_file", "A 2-D triangular Gmsh mesh (ASCII .msh 2.2 or 4.1) instead of the built-in square", NULL, app.file, app.file, sizeof(app.file), NULL));
  PetscCall(HybridProblemSetFromOptions(PetscOptionsObject, hp));
  PetscCall(PetNetOptionsInt("-rd_test", "Held-out trajectories", NULL, app.ntest, &app.ntest, NULL));
  PetscCall(PetscOptionsBool("-rd_test_jacobian", "Check the coupled Jacobian (diffusion + Net shell) and the parameter Jacobian: dot-product and finite-difference tests", NULL, app.testjac, &app.testjac, NULL));
  PetscOptionsEnd();
  PetscCheck(hp->nobs >= 1 && hp->ntrain >= 1 && app.ntest >= 1 && hp->T > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "Give -rd_snapshots >= 1, -rd_train >= 1, -rd_test >= 1 and -rd_final_time > 0");
  PetscCheck(hp->Du >= 0 && hp->Dv >= 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-rd_Du %g and -rd_Dv %g: diffusivities must be >= 0", (double)hp->Du, (double)hp->Dv);
  PetscCall(MeshCreate(&app));
  PetscCall(LaplacianBound(app.L, &bound));
  PetscCall(HybridProblemSetTimeStep(hp, PetscMax(hp->Du, hp->Dv) * bound));

  /* the MLP reaction term (a vertex is a sample of shape (2)), the training problem, a single simulation for evaluation */
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, "dense:16,tanh,dense:2"));
  PetscCall(NetSetSeed(net, 7));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetGetInputShape(net, &in));
  if (!in.ndim) {
    in.ndim   = 1;
    in.dim[0] = 2;
    PetscCall(NetSetInputShape(net, &in));
  }
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCheck(insize == 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP, "The Net's input has %" PetscInt_FMT " entries, but a vertex carries 2 (u, v): give the Net input shape 2 (or leave it unset)", insize);
  PetscCall(NetSetUp(net));
  PetscCall(SetGraphOperator(&app, net));
  PetscCall(HybridFitCreate(hp, net, &fit));
  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(HybridGridCreate(hp, app.ntest, &grid));
  PetscCall(HybridCreateTrueTS(&grid, &truets));
  PetscCall(HybridCreateTS(&grid, net, &ts));
  PetscCall(HybridGridCreate(hp, 1, &gridtrain));
  PetscCall(HybridCreateTrueTS(&gridtrain, &truetrain));
  PetscCall(HybridCreateTS(&gridtrain, net, &tstrain));
  PetscCall(HybridTrajectoryError(&grid, truets, ts, hp->ntrain, &err0, NULL));
  if (app.file[0]) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mesh file %s: %" PetscInt_FMT " triangles\n", app.file, app.mp.ncells));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mesh: %" PetscInt_FMT " vertices, %d ranks; dt %.4e (|L| <= %.4e); %" PetscInt_FMT " parameters\n", app.mp.N, size, (double)hp->dt, (double)bound, nparams));

  if (app.testjac) PetscCall(TestJacobian(&fit));

  /* train theta through TSAdjointSolve and TAO */
  PetscCall(HybridFitTrain(&fit, &tao, &ttrain));
  PetscCall(TaoGetSolutionStatus(tao, &its, &loss, NULL, NULL, NULL, &reason));
  PetscCall(TaoGetType(tao, &taotype));

  /* the learned model from the held-out initial conditions (and from a training one) */
  PetscCall(HybridTrajectoryError(&gridtrain, truetrain, tstrain, 0, &errtrain, NULL));
  PetscCall(HybridTrajectoryError(&grid, truets, ts, hp->ntrain, &err, &tsolve));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "TAO %s: %" PetscInt_FMT " iterations, %s\n", taotype, its, TaoConvergedReasons[reason]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "relative L2 error of the trajectories: held-out (%" PetscInt_FMT " initial conditions) %.6e (untrained model %.6e), training trajectory 0 %.6e\n", app.ntest, (double)err, (double)err0, (double)errtrain));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "summary: model=mesh_hybrid_fhn ranks=%d nodes=%" PetscInt_FMT " params=%" PetscInt_FMT " trajectories=%" PetscInt_FMT " test=%" PetscInt_FMT " snapshots=%" PetscInt_FMT " optimizer=%s iterations=%" PetscInt_FMT
                        " loss=%.6e rel_error=%.6e rel_error_untrained=%.6e train_time_s=%.2f solve_time_s=%.4f",
                        size, app.mp.N, nparams, hp->ntrain, app.ntest, hp->nobs, taotype, its, (double)loss, (double)err, (double)err0, (double)ttrain, (double)tsolve));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(TSDestroy(&ts));
  PetscCall(TSDestroy(&truets));
  PetscCall(TSDestroy(&tstrain));
  PetscCall(TSDestroy(&truetrain));
  PetscCall(HybridGridDestroy(&gridtrain));
  PetscCall(HybridGridDestroy(&grid));
  PetscCall(HybridFitDestroy(&fit));
  PetscCall(NetDestroy(&net));
  PetscCall(MeshDestroy(&app));
  PetscCall(PetscFinalize());
  return 0;
}
