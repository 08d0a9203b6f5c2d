/*
  PetNet's data directory: the model files (models/NAME.opts) and meshes (meshes/NAME.msh) that the programs are run with.
  Installed (make install PREFIX=...), it is PREFIX/share/petnet, beside PREFIX/lib/libpetnet.so; in the build tree it
  is share/, beside lib/. It is found from the library's own path (dladdr), so a program needs neither its source tree
  nor an environment variable: petnet-fashion -options_file share/models/mlp.opts works from any folder.
*/
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* dladdr() */
#endif
#include <petnetsys.h>
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

/*@C
  PetNetGetDataFile - the path of a data file given relative to PetNet's tree (share/models/mlp.opts): the name itself
  when it exists from the current folder, else the file in PetNet's data directory

  Not collective; usable before `PetscInitialize()` (`PetNetInitialize()` resolves -options_file with it)

  Input Parameters:
+ name - the file, e.g. share/models/mlp.opts, models/mlp.opts or share/meshes/lshape.msh
- len  - the size of path

  Output Parameter:
. path - name when it exists or is absolute; else DATADIR/F when that exists, where F is name without a leading
         "share/" and DATADIR is PREFIX/share/petnet for an installed PetNet (the folder ../share/petnet of
         libpetnet.so) or share/ of the build tree (../share); else name

  Level: intermediate

.seealso: `PetNetInitialize()`
@*/
PetscErrorCode PetNetGetDataFile(const char name[], size_t len, char path[])
{
  static const char *const dirs[] = {"../share/petnet/", "../share/"};
  const char              *rel    = name;
  Dl_info                  info;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(path, name, len));
  if (!name[0] || name[0] == '/' || !access(name, R_OK)) PetscFunctionReturn(0);
  if (!strncmp(rel, "share/", 6)) rel += 6;
  if (!dladdr((void *)PetNetGetDataFile, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) PetscFunctionReturn(0);
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(dirs); i++) {
    char  file[PETSC_MAX_PATH_LEN];
    char *slash;

    PetscCall(PetscStrncpy(file, info.dli_fname, sizeof(file)));
    slash    = strrchr(file, '/');
    slash[1] = 0;
    PetscCall(PetscStrlcat(file, dirs[i], sizeof(file)));
    PetscCall(PetscStrlcat(file, rel, sizeof(file)));
    if (!access(file, R_OK)) {
      PetscCall(PetscStrncpy(path, file, len));
      break;
    }
  }
  PetscFunctionReturn(0);
}
