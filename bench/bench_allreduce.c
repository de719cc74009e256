/* MPI_Allreduce (sum of floats, in place) alone, for the gradient block sizes of the
 * models bench_mpi.sh trains and of Transformer-base: microseconds per sum and the
 * algorithm bandwidth (bytes of the block over the time of one sum), best of 20 after 3
 * untimed sums. Run by bench/bench_mpi.sh under mpirun; rank 0 prints. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* floats: the d128 2+2 and d256 3+3 models of bench_mpi.sh (vocab ~8000), and
   * Transformer-base (d512, 6+6, 37k vocabulary, shared embeddings: ~63M). */
  static const long sizes[] = {2017280, 7712768, 63000000};
  if (rank == 0) printf("| floats | MB | ranks | best ms per sum | GB/s |\n|---:|---:|---:|---:|---:|\n");
  for (int s = 0; s < 3; s++) {
    long n = sizes[s];
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < n; i++) x[i] = 1e-3f * (float)(i % 97);
    double best = 1e30;
    for (int r = 0; r < 23; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      t = MPI_Wtime() - t;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= 3 && t < best) best = t;
      for (long i = 0; i < n; i++) x[i] *= 0.5f; /* keep the values finite */
    }
    if (rank == 0)
      printf("| %ld | %.1f | %d | %.2f | %.2f |\n", n, 4e-6 * (double)n, size, 1e3 * best,
             4e-9 * (double)n / best);
    free(x);
  }
  MPI_Finalize();
  return 0;
}
