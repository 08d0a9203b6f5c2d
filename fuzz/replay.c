/*
  Replays inputs through one fuzz harness (fuzz/fuzz.h): every file named on the command line, and every file inside
  every directory named there. The test suite runs it over fuzz/corpus/<reader>/ and fuzz/regress/<reader>/, so an
  input that once crashed a reader stays a test. Prints one line: "replay: N inputs" and exits 0 unless an input
  crashes the process (which the runner reports).
*/
#include "fuzz.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int RunFile(const char path[])
{
  FILE    *f = fopen(path, "rb");
  long     n;
  uint8_t *buf;

  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (uint8_t *)malloc(n > 0 ? (size_t)n : 1);
  if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
  fclose(f);
  LLVMFuzzerTestOneInput(buf, n > 0 ? (size_t)n : 0);
  free(buf);
  return 0;
}

int main(int argc, char **argv)
{
  long count = 0;

  for (int i = 1; i < argc; i++) {
    struct stat st;

    if (stat(argv[i], &st)) continue; /* a regress/ folder that does not exist yet */
    if (S_ISDIR(st.st_mode)) {
      DIR           *d = opendir(argv[i]);
      struct dirent *e;

      while (d && (e = readdir(d))) {
        char path[4096];

        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
        if (!RunFile(path)) count++;
      }
      if (d) closedir(d);
    } else if (!RunFile(argv[i]))
      count++;
  }
  printf("replay: %ld inputs\n", count);
  if (PetscInitializeCalled) PetscFinalize();
  return 0;
}
