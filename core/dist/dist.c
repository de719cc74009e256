/* The process group of data-parallel training (dist.h): MPI when built with it and
 * started by mpirun, a group of one otherwise. */
/* HAVE_MPI comes from config.h (./configure --with-mpi); a build that compiles the core
 * without it (the fuzzers, tests/fuzz/run.sh) gets the group of one. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist.h"
#include "base/clock.h"

#ifdef HAVE_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_size = 1;
static double g_sum_s = 0.0;
#ifdef HAVE_MPI
static bool g_mpi = false; /* MPI_Init was called */
#endif

bool dist_built(void) {
#ifdef HAVE_MPI
  return true;
#else
  return false;
#endif
}

/* The size an MPI launcher announces in the environment, or 0 when there is none. */
static int launcher_size(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", NULL};
  for (int i = 0; vars[i]; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return atoi(v) > 0 ? atoi(v) : 1;
  }
  if (getenv("PMIX_RANK")) return 1; /* PMIx without a size variable: ask MPI */
  return 0;
}

bool dist_init(int *argc, char ***argv) {
  int announced = launcher_size();
  if (!announced) return true;
#ifdef HAVE_MPI
  /* Only the main thread calls MPI; OpenMP's threads never do. */
  int provided;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fputs("intrus: MPI_Init_thread failed\n", stderr);
    return false;
  }
  g_mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  /* A collective that fails (a rank died) ends the whole job: no rank is left waiting. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  return true;
#else
  (void)argc;
  (void)argv;
  if (announced > 1) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r || atoi(r) == 0)
      fprintf(stderr, "intrus: started as %d ranks by an MPI launcher, but this intrus was "
                      "built without MPI: every rank would train alone. Rebuild with "
                      "./configure --with-mpi (apt-get install openmpi-bin libopenmpi-dev), "
                      "or start one process.\n", announced);
    return false;
  }
  return true;
#endif
}

void dist_finalize(void) {
#ifdef HAVE_MPI
  if (g_mpi) MPI_Finalize();
  g_mpi = false;
#endif
}

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }

#ifdef HAVE_MPI
/* Completes a non-blocking request, testing at first, then sleeping between tests so
 * that a rank waiting for rank 0 (a checkpoint, a validation decode, the next job)
 * leaves its core to the others instead of spinning in MPI's progress loop. */
static void wait_politely(MPI_Request *req) {
  int done = 0;
  for (int i = 0; i < 2000 && !done; i++) MPI_Test(req, &done, MPI_STATUS_IGNORE);
  long ns = 20000;
  while (!done) {
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    if (ns < 2000000) ns *= 2;
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
  }
}
#endif

enum intrus_status dist_agree(enum intrus_status st, struct intrus_error *err) {
  if (g_size == 1) return st;
#ifdef HAVE_MPI
  int mine = st ? g_rank : g_size, first;
  MPI_Request req;
  MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
  wait_politely(&req);
  if (first == g_size) return INTRUS_OK;
  struct intrus_error e;
  memset(&e, 0, sizeof e);
  if (first == g_rank) {
    e.status = st;
    if (err) memcpy(e.msg, err->msg, sizeof e.msg);
    e.msg[sizeof e.msg - 1] = '\0';
  }
  MPI_Ibcast(&e, (int)sizeof e, MPI_BYTE, first, MPI_COMM_WORLD, &req);
  wait_politely(&req);
  if (first == g_rank) return st;
  return intrus_error_set(err, e.status ? e.status : INTRUS_ERR_INVALID, "rank %d: %s", first,
                          e.msg);
#else
  (void)err;
  return st;
#endif
}

void dist_sum_floats(float *x, size_t n) {
  if (g_size == 1) return;
#ifdef HAVE_MPI
  double t = mono_s();
  /* MPI counts are ints: sum in pieces of at most 2^30 floats. */
  for (size_t off = 0; off < n;) {
    size_t k = n - off < (1u << 30) ? n - off : (1u << 30);
    MPI_Allreduce(MPI_IN_PLACE, x + off, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    off += k;
  }
  g_sum_s += mono_s() - t;
#else
  (void)x;
  (void)n;
#endif
}

void dist_sum_doubles(double *x, size_t n) {
  if (g_size == 1) return;
#ifdef HAVE_MPI
  MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
  (void)x;
  (void)n;
#endif
}

void dist_bcast(void *p, size_t bytes) {
  if (g_size == 1) return;
#ifdef HAVE_MPI
  for (size_t off = 0; off < bytes;) {
    size_t k = bytes - off < (1u << 30) ? bytes - off : (1u << 30);
    MPI_Bcast((char *)p + off, (int)k, MPI_BYTE, 0, MPI_COMM_WORLD);
    off += k;
  }
#else
  (void)p;
  (void)bytes;
#endif
}

void dist_gather_u64(uint64_t v, uint64_t *out) {
  if (g_size == 1) {
    out[0] = v;
    return;
  }
#ifdef HAVE_MPI
  MPI_Allgather(&v, 1, MPI_UINT64_T, out, 1, MPI_UINT64_T, MPI_COMM_WORLD);
#endif
}

double dist_sum_seconds(void) { return g_sum_s; }

void dist_job_send(const struct dist_job *job) {
  if (g_size == 1 || g_rank != 0) return;
#ifdef HAVE_MPI
  struct dist_job j = *job;
  MPI_Request req;
  MPI_Ibcast(&j, (int)sizeof j, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
#endif
}

void dist_job_recv(struct dist_job *job) {
  memset(job, 0, sizeof *job);
  if (g_size == 1) return;
#ifdef HAVE_MPI
  MPI_Request req;
  MPI_Ibcast(job, (int)sizeof *job, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
  wait_politely(&req);
#endif
}
