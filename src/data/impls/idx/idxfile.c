/*
  IDX files: header checks against the file length, and reading a block of samples (gzip streams skip forward).

  A gzip file is trusted only as far as it is checked: its header sizes must agree with the trailer's ISIZE and be
  possible at all for a deflate stream of the file's size (at most 1032 output bytes per input byte), and one rank
  decompresses the stream to its end so that zlib verifies the CRC-32 even when the samples used are only a prefix.
*/
#include "idxfile.h"
#include <sys/stat.h>

/* zlib's description of the last error on the stream, without the file name it starts with */
static const char *IDXFileZlibError(IDXFile *f)
{
  int         err;
  const char *msg = gzerror(f->gz, &err);
  size_t      len = strlen(f->name);

  if (err == Z_ERRNO) return "read error";
  if (!msg || !msg[0]) return "unknown error";
  if (!strncmp(msg, f->name, len) && msg[len] == ':' && msg[len + 1] == ' ') msg += len + 2;
  return msg;
}

static PetscErrorCode IDXFileCompressedLength(IDXFile *f, PetscInt64 *length)
{
  struct stat st;

  PetscFunctionBegin;
  PetscCheck(!stat(f->name, &st), PETSC_COMM_SELF, PETSC_ERR_FILE_READ, "Cannot stat IDX file \"%s\"", f->name);
  *length = (PetscInt64)st.st_size;
  PetscFunctionReturn(0);
}

/* Bytes of uncompressed data the file holds: its size for a plain file, the gzip trailer's ISIZE (mod 2^32) otherwise. */
static PetscErrorCode IDXFileDataLength(IDXFile *f, PetscBool *gzip, PetscInt64 *length)
{
  struct stat st;

  PetscFunctionBegin;
  PetscCheck(!stat(f->name, &st), PETSC_COMM_SELF, PETSC_ERR_FILE_READ, "Cannot stat IDX file \"%s\"", f->name);
  *gzip   = (PetscBool)!gzdirect(f->gz);
  *length = (PetscInt64)st.st_size;
  if (*gzip) {
    FILE         *fp;
    unsigned char isize[4] = {0, 0, 0, 0};
    size_t        got      = 0;

    PetscCall(PetscFOpen(PETSC_COMM_SELF, f->name, "rb", &fp));
    if (st.st_size >= 4 && !fseek(fp, -4L, SEEK_END)) got = fread(isize, 1, 4, fp);
    PetscCall(PetscFClose(PETSC_COMM_SELF, fp));
    *length = got == 4 ? (PetscInt64)isize[0] | (PetscInt64)isize[1] << 8 | (PetscInt64)isize[2] << 16 | (PetscInt64)isize[3] << 24 : -1;
  }
  PetscFunctionReturn(0);
}

/*
  IDXFileOpen - opens an IDX file of unsigned bytes with mindims..maxdims dimensions and checks that its header agrees
  with the length of the file. Every rank opens and checks the file, so errors are collective. what: "images", "labels".
*/
PetscErrorCode IDXFileOpen(Dataset ds, const char name[], const char what[], PetscInt mindims, PetscInt maxdims, IDXFile *f)
{
  MPI_Comm      comm = PetscObjectComm((PetscObject)ds);
  unsigned char head[4 + 4 * 4];
  int           got;
  unsigned int  magic;
  PetscInt64    nbytes = 1, length;
  PetscBool     gzip;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(f, sizeof(*f)));
  PetscCall(PetscStrncpy(f->name, name, sizeof(f->name)));
  PetscCall(DatasetCheckFile_Private(ds, name, what));
  f->gz = gzopen(name, "rb");
  PetscCheck(f->gz, comm, PETSC_ERR_FILE_OPEN, "Cannot open the %s file \"%s\"", what, name);
  PetscCheck(!gzbuffer(f->gz, 1 << 17), comm, PETSC_ERR_LIB, "zlib: gzbuffer() failed on \"%s\"", name);
  got = gzread(f->gz, head, 4);
  PetscCheck(got >= 0, comm, PETSC_ERR_FILE_READ, "The %s file \"%s\" is corrupt gzip data (zlib: %s): replace the file", what, name, IDXFileZlibError(f));
  PetscCheck(got == 4, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s file \"%s\" is too short to be an IDX file (%d bytes)", what, name, got);
  magic = (unsigned)head[0] << 24 | (unsigned)head[1] << 16 | (unsigned)head[2] << 8 | (unsigned)head[3];
  PetscCheck(head[0] == 0 && head[1] == 0 && head[2] == 0x08 && head[3] >= mindims && head[3] <= maxdims, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s file \"%s\" has the wrong magic number 0x%08x: expected 0x%08x (IDX, unsigned bytes, %d dimensions)%s",
             what, name, magic, 0x0800u | (unsigned)(maxdims == 1 ? 1 : 3), (int)(maxdims == 1 ? 1 : 3), gzdirect(f->gz) ? "; the file is not gzip-compressed either, it is corrupt or not an IDX file" : "");
  f->ndims  = head[3];
  f->header = 4 + 4 * f->ndims;
  got       = gzread(f->gz, head + 4, (unsigned)(4 * f->ndims));
  PetscCheck(got >= 0, comm, PETSC_ERR_FILE_READ, "The %s file \"%s\" is corrupt gzip data (zlib: %s): replace the file", what, name, IDXFileZlibError(f));
  PetscCheck(got == 4 * f->ndims, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s file \"%s\" ends inside its header", what, name);
  for (PetscInt d = 0; d < f->ndims; d++) {
    const unsigned char *p = head + 4 + 4 * d;
    PetscInt64           n = (PetscInt64)p[0] << 24 | (PetscInt64)p[1] << 16 | (PetscInt64)p[2] << 8 | (PetscInt64)p[3];

    PetscCheck(n > 0 && n <= PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s file \"%s\" declares size %" PetscInt64_FMT " in dimension %" PetscInt_FMT ": sizes must be in 1..%d", what, name, n, d, PETSC_MAX_INT);
    f->dims[d] = (PetscInt)n;
    nbytes *= n;
    PetscCheck(nbytes <= PETSC_MAX_INT, comm, PETSC_ERR_SUP, "The %s file \"%s\" holds more than %d bytes, too many for 32-bit PETSc indices", what, name, PETSC_MAX_INT);
  }
  f->samplesize = nbytes / f->dims[0];
  PetscCall(IDXFileDataLength(f, &gzip, &length));
  if (gzip) {
    PetscInt64 compressed;

    PetscCall(IDXFileCompressedLength(f, &compressed));
    PetscCheck(f->header + nbytes <= 1032 * compressed + 1024, comm, PETSC_ERR_FILE_UNEXPECTED,
               "The %s file \"%s\" announces %" PetscInt_FMT " samples of %" PetscInt64_FMT " bytes (%" PetscInt64_FMT " bytes with the header), more than a gzip file of %" PetscInt64_FMT " bytes can hold: its header is corrupt", what, name,
               f->dims[0], f->samplesize, f->header + nbytes, compressed);
    PetscCheck(length == ((f->header + nbytes) & 0xffffffffLL), comm, PETSC_ERR_FILE_UNEXPECTED,
               "The %s file \"%s\" announces %" PetscInt_FMT " samples of %" PetscInt64_FMT " bytes (%" PetscInt64_FMT " bytes with the header), but its gzip trailer records %" PetscInt64_FMT " uncompressed bytes: the file is truncated or corrupt",
               what, name, f->dims[0], f->samplesize, f->header + nbytes, length);
  } else {
    PetscCheck(length == f->header + nbytes, comm, PETSC_ERR_FILE_UNEXPECTED,
               "The %s file \"%s\" announces %" PetscInt_FMT " samples of %" PetscInt64_FMT " bytes (%" PetscInt64_FMT " bytes with the header), but it holds %" PetscInt64_FMT " bytes: the file is %s", what, name, f->dims[0], f->samplesize,
               f->header + nbytes, length, length < f->header + nbytes ? "truncated" : "longer than its header says");
  }
  PetscFunctionReturn(0);
}

/*
  IDXFileReadSamples - dst[(i - start) * samplesize + j] = byte j of sample i, for samples start..start+n-1.
  A gzip stream is decompressed up to the block (gzseek skips forward). With verify, the stream is then read on to its
  end, where zlib checks the CRC-32 and the length of the whole file. *ok is PETSC_FALSE when the data could not be read
  or failed that check: the caller reduces it over the ranks so the error is collective.
*/
PetscErrorCode IDXFileReadSamples(IDXFile *f, PetscInt start, PetscInt n, PetscBool verify, PetscScalar *dst, PetscBool *ok)
{
  const size_t   chunk = 1 << 20;
  unsigned char *buf;
  size_t         total = (size_t)n * (size_t)f->samplesize, done = 0;

  PetscFunctionBegin;
  *ok = PETSC_TRUE;
  if (!n && !verify) PetscFunctionReturn(0);
  if (gzseek(f->gz, (z_off_t)(f->header + (PetscInt64)start * f->samplesize), SEEK_SET) < 0) {
    *ok = PETSC_FALSE;
    PetscFunctionReturn(0);
  }
  PetscCall(PetscMalloc1(chunk, &buf));
  while (done < total) {
    unsigned want = (unsigned)PetscMin(chunk, total - done);
    int      got  = gzread(f->gz, buf, want);

    if (got != (int)want) {
      *ok = PETSC_FALSE;
      break;
    }
    for (unsigned i = 0; i < want; i++) dst[done + i] = (PetscScalar)buf[i];
    done += want;
  }
  if (*ok && verify && !gzdirect(f->gz)) {
    int got, err;

    while ((got = gzread(f->gz, buf, (unsigned)chunk)) > 0) {}
    (void)gzerror(f->gz, &err);
    if (got < 0 || err != Z_OK) *ok = PETSC_FALSE;
  }
  PetscCall(PetscFree(buf));
  PetscFunctionReturn(0);
}

PetscErrorCode IDXFileClose(IDXFile *f)
{
  PetscFunctionBegin;
  if (f->gz) gzclose(f->gz);
  f->gz = NULL;
  PetscFunctionReturn(0);
}
