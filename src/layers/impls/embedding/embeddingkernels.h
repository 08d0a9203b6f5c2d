/*
  embedding's forward, backward and jvp on one element type, included once per type by embedding.c:
    EMB_T        PetscScalar or float: the values x (the ids), y, dx, dy
    EMB_NAME(f)  f or fSingle
  The table and its gradient are double for both types (the parameters stay double); a float pass rounds the rows it
  copies out and widens the cotangents it adds in.
*/

/* y[p] = W[id(p)]: each position's row of the table. Refuses any id that is not an integer in [0, V) first. */
static PetscErrorCode EMB_NAME(LayerForward_Embedding)(Layer layer, PetscInt n, const PetscScalar *theta, const EMB_T *x, EMB_T *y)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;
  const PetscInt   E = emb->E, T = emb->T, P = n * T, nparts = PetNetThreadParts(P, EMBEDDING_PART_POSITIONS(E));

  PetscFunctionBegin;
  for (PetscInt p = 0; p < P; p++) PetscCall(EmbeddingCheckId(layer, p, (PetscReal)x[p]));
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscInt p0, p1;

    PetNetThreadPart(P, nparts, part, &p0, &p1);
    for (PetscInt p = p0; p < p1; p++) {
      const PetscScalar *row = theta + (size_t)x[p] * E;

      for (PetscInt e = 0; e < E; e++) y[(size_t)p * E + e] = (EMB_T)row[e];
    }
  }
  PetscFunctionReturn(0);
}

/*
  dW[v] += sum over the positions p with id(p) = v of dy[p]   (ACCUMULATES)
  dx = 0: the ids are not differentiable (their cotangent is zero).
  The scatter-add without atomics: the rows of the table are cut into parts that depend on V and E only, and each
  part scans every position in order, adding those whose id falls in its rows. A row's sum therefore always runs over
  its positions in the same order: the same bits for any number of threads.
*/
static PetscErrorCode EMB_NAME(LayerBackward_Embedding)(Layer layer, PetscInt n, const PetscScalar *theta, const EMB_T *x, const EMB_T *y, const EMB_T *dy, EMB_T *dx, PetscScalar *dtheta)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;
  const PetscInt   E = emb->E, T = emb->T, V = emb->V, P = n * T, nparts = PetNetThreadParts(V, EMBEDDING_PART_ROWS(E));

  PetscFunctionBegin;
  if (dx)
    for (PetscInt p = 0; p < P; p++) dx[p] = (EMB_T)0;
  if (!dtheta) PetscFunctionReturn(0);
#pragma omp parallel for num_threads(PetNetThreads()) schedule(dynamic, 1) if (nparts > 1 && (PetscLogDouble)P * E > 4096)
  for (PetscInt part = 0; part < nparts; part++) {
    PetscInt v0, v1;

    PetNetThreadPart(V, nparts, part, &v0, &v1);
    for (PetscInt p = 0; p < P; p++) {
      const PetscInt v = (PetscInt)x[p];

      if (v < v0 || v >= v1) continue;
      for (PetscInt e = 0; e < E; e++) dtheta[(size_t)v * E + e] += (PetscScalar)dy[(size_t)p * E + e];
    }
  }
  PetscCall(PetscLogFlops((PetscLogDouble)P * E));
  PetscFunctionReturn(0);
}

/* dy[p] = dW[id(p)] (zero when dtheta is NULL); an input tangent dx is ignored (the map is constant in the ids between integers) */
static PetscErrorCode EMB_NAME(LayerJVP_Embedding)(Layer layer, PetscInt n, const PetscScalar *theta, const EMB_T *x, const EMB_T *y, const EMB_T *dx, const PetscScalar *dtheta, EMB_T *dy)
{
  Layer_Embedding *emb = (Layer_Embedding *)layer->data;
  const PetscInt   E = emb->E, T = emb->T, P = n * T;

  PetscFunctionBegin;
  for (PetscInt p = 0; p < P; p++) {
    const PetscScalar *row = dtheta ? dtheta + (size_t)x[p] * E : NULL;

    for (PetscInt e = 0; e < E; e++) dy[(size_t)p * E + e] = row ? (EMB_T)row[e] : (EMB_T)0;
  }
  PetscFunctionReturn(0);
}
