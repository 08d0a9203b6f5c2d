/*
  Winograd F(2x2, 3x3) for 3x3, stride-1, undilated, ungrouped convolutions (Lavin and Gray, "Fast Algorithms for
  Convolutional Neural Networks", 2016). A 2x2 output tile y of a channel pair (k, c) is, from the 4x4 input patch d
  under it and the 3x3 filter g,
      y = A^T [ (G g G^T) .* (B^T d B) ] A,
      B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],  A^T = [1 1 1 0; 0 1 -1 -1]
  and the sum over c of the 16 products .* is, for each of the 16 positions xi = 4 i + j, one GEMM over all tiles.

  Tiles: TH x TW = ceil(Ho/2) x ceil(Wo/2) per sample; tile (a, b) covers the outputs (2a.., 2b..) and reads the input
  patch at rows 2a - ph .. 2a - ph + 3, columns 2b - pw .. 2b - pw + 3. Input outside the image is the zero padding;
  outputs past Ho or Wo (odd sizes) are computed and dropped. For a chunk of T tiles (whole samples):
    V   [16][T][Cin]     V_xi = (B^T d B)_xi            column-major Cin x T,    ld Cin
    U   [16][Cout][Cin]  U_xi = (G g G^T)_xi            column-major Cin x Cout, ld Cin
    Ut  [16][Cin][Cout]  U_xi^T                         column-major Cout x Cin, ld Cout
    M   [16][T][Cout]    M_xi = Ut_xi V_xi              column-major Cout x T,   ld Cout    dgemm('N','N')
    y = A^T M A (+ b)
  backward is the transpose of each step, in reverse:
    dM = A dy A^T,  db += sum dy
    dU_xi += V_xi dM_xi^T                               dgemm('N','T'), then dW += G^T dU G
    dV_xi  = U_xi dM_xi                                 dgemm('N','N'), then dx = sum over the patches of B dV B^T
  sobackward (backward is bilinear in (W, x); db = sum dy depends on neither): backward's steps with the tangents,
    dU_xi += V(xdot)_xi dM_xi^T, dWdot += G^T dU G      the weight steps with V(xdot) for V(x)
    dV_xi  = U(Wdot)_xi dM_xi,   dxdot += B dV B^T      the input steps with U(Wdot) for U(W), added to dxdot
  U is kept in both layouts so that both products of the chunk loop are 'N','N' GEMMs (OpenBLAS's fastest for
  these shapes). Chunks are small (a few samples, -conv2d_max_workspace) so that V and M stay in cache.
  Every transform works on whole channel vectors (channels-last), so its inner loop runs over contiguous channels.
  The 16 GEMMs of Cout x Cin x tiles replace im2col's Cout x 9 Cin x pixels one: 2.25 times fewer multiplications; and
  backward is the exact transpose of forward (same transforms, transposed), so the adjoint identity holds to round-off.
  The workspace (V, M, U, Ut, dU in chunks of samples, conv->wg.dbl and, for float, conv->wg.sgl) is
  Conv2dGetWorkspace_Winograd()'s (conv2dwinogradkernels.h).

  Threads (../../../../include/petnet/private/threadsimpl.h): forward and jvp run their chunks in parallel, each
  thread with its own V, M and scratch; backward and sobackward cut the batch into parts of whole samples
  (PetNetThreadParts(n, 1)), each part running its chunks in order into its own dU and bias sums, which are added in
  part order at the end. The results are the same bits for any number of threads.

  Single precision (a Net at -net_precision single or bfloat16): the same algorithm, tiles, chunks and threads on float
  values, sgemm for the 16 products, the parameters double: U = float(G W G^T) (each entry in double, rounded once),
  b_f = float(b); each chunk's weight products in float, added into the part's DOUBLE dU (LayerGemm()'s accumulation
  into double), dW += G^T (dU_0 + dU_1 + ...) G in double; db summed in double in a pass of its own over dy. The float
  rounding of a weight-gradient sum is that of one chunk; chunks, parts and ranks add in double. No sobackward in
  float: low precision refuses second-order passes.

  Files: the transforms, the GEMMs and the forward, backward and jvp passes are conv2dwinogradkernels.h's, included
  here once on double and once on float; this file holds the double sobackward and the weight-gradient steps both
  precisions share in double (part accumulators, their sum in part order, dW += G^T dU G).
*/
#include "conv2d.h"

#include "../../interface/layergemm.h"

/* the bias (forward) or its tangent (jvp) in double: theta itself, or NULL without a bias */
static inline const PetscScalar *WinogradBias(Layer_Conv2d *conv, const PetscScalar *theta)
{
  return conv->base.bias ? theta + conv->base.nout * conv->base.kg : NULL;
}

/* in float: rounded into the workspace's b (zeros without a bias) */
static inline const float *WinogradBiasSingle(Layer_Conv2d *conv, const PetscScalar *theta)
{
  for (PetscInt o = 0; o < conv->base.nout; o++) conv->wg.sgl.b[o] = conv->base.bias ? (float)theta[conv->base.nout * conv->base.kg + o] : 0.0f;
  return conv->wg.sgl.b;
}

#define WINOGRAD_T               PetscScalar
#define WINOGRAD_NAME(f)         f
#define WINOGRAD_ENTRY(f)        f##_Winograd
#define WINOGRAD_WORK            Conv2dWinogradWork
#define WINOGRAD_WS(conv)        (&(conv)->wg.dbl)
#define WINOGRAD_DB_IN_TRANSFORM 1
#include "conv2dwinogradkernels.h"
#undef WINOGRAD_T
#undef WINOGRAD_NAME
#undef WINOGRAD_ENTRY
#undef WINOGRAD_WORK
#undef WINOGRAD_WS
#undef WINOGRAD_DB_IN_TRANSFORM
#define WINOGRAD_T               float
#define WINOGRAD_NAME(f)         f##Single
#define WINOGRAD_ENTRY(f)        f##Single_Winograd
#define WINOGRAD_WORK            Conv2dWinogradWorkSingle
#define WINOGRAD_WS(conv)        (&(conv)->wg.sgl)
#define WINOGRAD_DB_IN_TRANSFORM 0
#include "conv2dwinogradkernels.h"
#undef WINOGRAD_T
#undef WINOGRAD_NAME
#undef WINOGRAD_ENTRY
#undef WINOGRAD_WORK
#undef WINOGRAD_WS
#undef WINOGRAD_DB_IN_TRANSFORM

/* dW[k][p][q][c] += sum over xi = (i, j) of G[i][p] G[j][q] dU[xi][k][c]: the transpose of WinogradWeights */
void Conv2dWinogradWeightsTranspose_Private(const Layer_Conv2d *conv, const PetscScalar *dU, PetscScalar *dW)
{
  const PetscInt cin = conv->base.cin, cout = conv->base.nout;
  const size_t   plane = (size_t)cout * cin;

  for (PetscInt k = 0; k < cout; k++) {
    PetscScalar *dg = dW + (size_t)k * 9 * cin;

    for (PetscInt i = 0; i < 4; i++)
      for (PetscInt j = 0; j < 4; j++) {
        const PetscScalar *du = dU + (4 * i + j) * plane + (size_t)k * cin;

        for (PetscInt p = 0; p < 3; p++)
          for (PetscInt q = 0; q < 3; q++) {
            const PetscReal gij = WinogradG[i][p] * WinogradG[j][q];

            if (gij == 0.0) continue;
            for (PetscInt c = 0; c < cin; c++) dg[(3 * p + q) * cin + c] += gij * du[c];
          }
      }
  }
}

/*
  The double accumulators of part p of nparts, in the part buffers dUparts [parts][16][Cout][Cin] and dbparts
  [parts][Cout]: dU_p (zeroed) and the bias sums (db itself with one part, else the part's zeroed sums; NULL without
  db). Both element types' parts accumulate in double.
*/
void Conv2dWinogradPartAccumulators_Private(const Layer_Conv2d *conv, PetscScalar *dUparts, PetscScalar *dbparts, PetscInt nparts, PetscInt p, PetscScalar *db, PetscScalar **dU, PetscScalar **dbp)
{
  const size_t nu = (size_t)16 * conv->base.nout * conv->base.cin;

  *dU = dUparts + p * nu;
  for (size_t i = 0; i < nu; i++) (*dU)[i] = 0.0;
  *dbp = db && nparts > 1 ? dbparts + (size_t)p * conv->base.nout : db;
  if (*dbp && nparts > 1)
    for (PetscInt o = 0; o < conv->base.nout; o++) (*dbp)[o] = 0.0;
}

/* dW += G^T (dU_0 + dU_1 + ...) G and db += the parts' bias sums, in part order (dU_0 accumulates the others) */
void Conv2dWinogradAddParts_Private(const Layer_Conv2d *conv, PetscScalar *dUparts, const PetscScalar *dbparts, PetscInt nparts, PetscScalar *dW, PetscScalar *db)
{
  const size_t nu = (size_t)16 * conv->base.nout * conv->base.cin;

  for (PetscInt p = 1; p < nparts; p++)
    for (size_t i = 0; i < nu; i++) dUparts[i] += dUparts[p * nu + i];
  Conv2dWinogradWeightsTranspose_Private(conv, dUparts, dW);
  if (db && nparts > 1)
    for (PetscInt p = 0; p < nparts; p++)
      for (PetscInt o = 0; o < conv->base.nout; o++) db[o] += dbparts[(size_t)p * conv->base.nout + o];
}

/*
  sobackward: dWdot += (conv in W at xdot)^T dy, dxdot += (conv in x with Wdot)^T dy, parts of samples in parallel as
  in backward; no bias term (db = sum dy)
*/
PetscErrorCode Conv2dSOBackward_Winograd(Layer layer, PetscInt n, const PetscScalar *xdot, const PetscScalar *Wdot, const PetscScalar *dy, PetscScalar *dxdot, PetscScalar *dWdot)
{
  Layer_Conv2d       *conv = (Layer_Conv2d *)layer->data;
  Conv2dWinogradWork *s    = &conv->wg.dbl;
  const PetscInt      tps = conv->wg.tiles[0] * conv->wg.tiles[1], nparts = PetNetThreadParts(n, 1);
  const PetscBool     doW = (PetscBool)(dWdot && xdot), dox = (PetscBool)(dxdot && Wdot);
  PetscErrorCode      err = 0;

  PetscFunctionBegin;
  PetscCall(Conv2dGetWorkspace_Winograd(layer, n));
  if (dox) WinogradWeights(conv, Wdot, s->U, NULL);
  s->Vx = NULL; /* V(xdot) and dV replace V(x) */
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt p = 0; p < nparts; p++) {
    const WinogradThread t   = WinogradThreadBuffers(conv);
    PetscScalar         *dUc = s->dUc + (size_t)PetNetThreadId() * 16 * conv->base.nout * conv->base.cin, *dU = NULL, *dbp = NULL;
    PetscInt             s0, s1;
    PetscErrorCode       ierr = 0;

    PetNetThreadPart(n, nparts, p, &s0, &s1);
    if (doW) Conv2dWinogradPartAccumulators_Private(conv, s->dU, s->dbpart, nparts, p, NULL, &dU, &dbp);
    for (PetscInt c0 = s0; c0 < s1 && !ierr; c0 += s->chunk) {
      const PetscInt ns = PetscMin(s->chunk, s1 - c0), T = ns * tps;

      WinogradOutputTranspose(conv, ns, dy + (size_t)c0 * layer->outsize, t.M, t.scratch, NULL);
      if (doW) {
        WinogradInput(conv, ns, xdot + (size_t)c0 * layer->insize, t.V);
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_WEIGHTS, T, NULL, t.V, t.M, dUc, dU);
      }
      if (dox && !ierr) {
        ierr = WinogradGemms(conv, WINOGRAD_GEMM_INPUT, T, s->U, t.V, t.M, NULL, NULL);
        WinogradInputTranspose(conv, ns, t.V, PETSC_TRUE, t.scratch, dxdot + (size_t)c0 * layer->insize);
      }
    }
    PetNetThreadsSetError(&err, ierr);
  }
  PetNetThreadsCheck(err, "conv2d winograd sobackward");
  if (doW) Conv2dWinogradAddParts_Private(conv, s->dU, s->dbpart, nparts, dWdot, NULL);
  PetscCall(PetscLogFlops(WinogradGemmFlops(conv, n) * ((dox ? 1 : 0) + (doW ? 1 : 0))));
  PetscFunctionReturn(0);
}
