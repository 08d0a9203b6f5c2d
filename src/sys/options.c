/*
  Integer options read in 64 bits and checked against a range, with an error that names the option.

  PETSc 3.18's PetscOptionsInt() and PetscOptionsGetInt() convert with a 64-bit strtoll() and keep the low 32 bits of
  the result when PetscInt is 32-bit: -cosmo3d_grid 4294967304 is read as 8, 10000000000 as 1410065408, 2147483648 as
  -2147483648, and PetscOptionsRangeInt() then checks the wrapped value. PetNetOptionsInt(), PetNetOptionsBoundedInt(),
  PetNetOptionsRangeInt() and PetNetOptionsGetInt() take the same arguments as PETSc's functions of those names and
  refuse, naming the option with its prefix and the range it takes, any value that is not an integer or lies outside
  [lo, hi] (by default the range of a PetscInt). PETSc's names for its constants (DECIDE, DEFAULT, DETERMINE, with or
  without PETSC_) are read as PETSc reads them.
*/
#include <petnetsys.h>
#include <errno.h>
#include <stdlib.h>

static PetscErrorCode PetNetOptionsRange_Private(PetscInt lo, PetscInt hi, size_t len, char text[])
{
  PetscFunctionBegin;
  if (lo == PETSC_MIN_INT && hi == PETSC_MAX_INT)
    PetscCall(PetscSNPrintf(text, len, "an integer from %" PetscInt_FMT " to %" PetscInt_FMT " (a PetscInt)", lo, hi));
  else if (hi == PETSC_MAX_INT)
    PetscCall(PetscSNPrintf(text, len, "an integer at least %" PetscInt_FMT " (and at most %" PetscInt_FMT ", the largest PetscInt)", lo, hi));
  else
    PetscCall(PetscSNPrintf(text, len, "an integer from %" PetscInt_FMT " to %" PetscInt_FMT, lo, hi));
  PetscFunctionReturn(0);
}

/* The value of option -<pre><opt + 1> given as str, checked against [lo, hi] */
static PetscErrorCode PetNetOptionsParseInt_Private(MPI_Comm comm, const char pre[], const char opt[], const char str[], PetscInt lo, PetscInt hi, PetscInt *value)
{
  static const struct {
    const char *name;
    PetscInt    value;
  } named[]        = {{"DECIDE", PETSC_DECIDE}, {"DEFAULT", PETSC_DEFAULT}, {"DETERMINE", PETSC_DETERMINE}};
  const char *name = opt[0] == '-' ? opt + 1 : opt;
  char        range[128], *end;
  long long   v;
  PetscBool   found = PETSC_FALSE;

  PetscFunctionBegin;
  if (!pre) pre = "";
  PetscCall(PetNetOptionsRange_Private(lo, hi, sizeof(range), range));
  errno = 0;
  v     = strtoll(str, &end, 10);
  if (!str[0] || end == str || *end) {
    const char *s = str;
    PetscBool   petsc;

    PetscCall(PetscStrncmp(s, "PETSC_", 6, &petsc));
    if (!petsc) PetscCall(PetscStrncmp(s, "petsc_", 6, &petsc));
    if (petsc) s += 6;
    for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(named) && !found; i++) {
      PetscCall(PetscStrcasecmp(s, named[i].name, &found));
      if (found) v = named[i].value;
    }
    PetscCheck(found, comm, PETSC_ERR_ARG_WRONG, "-%s%s needs %s, not \"%s\"", pre, name, range, str);
  }
  PetscCheck(errno != ERANGE && v <= hi, comm, PETSC_ERR_ARG_OUTOFRANGE, "-%s%s %s is too large: -%s%s takes %s", pre, name, str, pre, name, range);
  PetscCheck(v >= lo, comm, PETSC_ERR_ARG_OUTOFRANGE, "-%s%s %s is too small: -%s%s takes %s", pre, name, str, pre, name, range);
  *value = (PetscInt)v;
  PetscFunctionReturn(0);
}

/*@C
  PetNetOptionsInt_Private - reads an integer option in 64 bits and checks its range (use the macros
  `PetNetOptionsInt()`, `PetNetOptionsBoundedInt()` and `PetNetOptionsRangeInt()` inside `PetscOptionsBegin()`)

  Logically collective

  Input Parameters:
+ PetscOptionsObject - the options block (the macros pass it)
. opt     - the option, "-name" (the block's prefix is added)
. text    - the help text
. man     - the manual page of the setter, or NULL
. current - the value printed by -help as the current one
. lo      - the smallest value allowed
- hi      - the largest value allowed

  Output Parameters:
+ value - the value, left as it is when the option is not given (it may be the variable holding current)
- set   - whether the option was given (may be NULL)

  Notes:
  A value that is not an integer or lies outside [lo, hi], including one beyond a `PetscInt` that PETSc's
  `PetscOptionsInt()` would wrap around (4294967304 read as 8 with 32-bit indices), is an error that names the option
  with its prefix and the range it takes. `PetNetOptionsInt()` allows every `PetscInt`, `PetNetOptionsBoundedInt()`
  at least lo, `PetNetOptionsRangeInt()` lo to hi: the same arguments as PETSc's functions of those names.

  Level: developer

.seealso: `PetNetOptionsGetInt()`, `PetscOptionsInt()`, `PetscOptionsRangeInt()`
@*/
PetscErrorCode PetNetOptionsInt_Private(PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], PetscInt current, PetscInt *value, PetscBool *set, PetscInt lo, PetscInt hi)
{
  char      def[32], str[256];
  PetscBool flg;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(def, sizeof(def), "%" PetscInt_FMT, current));
  PetscCall(PetscOptionsString(opt, text, man, def, str, sizeof(str), &flg));
  if (flg) PetscCall(PetNetOptionsParseInt_Private(PetscOptionsObject->comm, PetscOptionsObject->prefix, opt, str, lo, hi, value));
  if (set) *set = flg;
  PetscFunctionReturn(0);
}

/*@C
  PetNetOptionsGetInt - `PetscOptionsGetInt()` read in 64 bits: a value that is not an integer or does not fit a
  `PetscInt` is an error that names the option, never a wrapped-around value

  Not collective

  Input Parameters:
+ options - the options database, or NULL for the default one
. pre     - the prefix, or NULL
- name    - the option, "-name"

  Output Parameters:
+ value - the value, left as it is when the option is not given
- set   - whether the option was given (may be NULL)

  Level: intermediate

.seealso: `PetNetOptionsInt()`, `PetscOptionsGetInt()`
@*/
PetscErrorCode PetNetOptionsGetInt(PetscOptions options, const char pre[], const char name[], PetscInt *value, PetscBool *set)
{
  char      str[256];
  PetscBool flg;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(options, pre, name, str, sizeof(str), &flg));
  if (flg) PetscCall(PetNetOptionsParseInt_Private(PETSC_COMM_SELF, pre, name, str, PETSC_MIN_INT, PETSC_MAX_INT, value));
  if (set) *set = flg;
  PetscFunctionReturn(0);
}
