/* The einsum kind's contractions (einsum.h), in double and in float from one text (einsumkernels.h). */
#include "einsum.h"

#define EIN_T            PetscScalar
#define EIN_NAME(f)      f
#define EIN_GEMM_BATCHED LayerGemmBatched
#define EIN_EPILOGUE     LayerGemmEpilogue
#include "einsumkernels.h"
#undef EIN_T
#undef EIN_NAME
#undef EIN_GEMM_BATCHED
#undef EIN_EPILOGUE
#define EIN_T            float
#define EIN_NAME(f)      f##Single
#define EIN_GEMM_BATCHED LayerGemmBatchedSingle
#define EIN_EPILOGUE     LayerGemmEpilogueSingle
#include "einsumkernels.h"
#undef EIN_T
#undef EIN_NAME
#undef EIN_GEMM_BATCHED
#undef EIN_EPILOGUE
