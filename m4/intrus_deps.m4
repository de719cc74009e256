# The checks for what intrus links against. Each adds to $intrus_missing a line naming
# the library and the Debian package that provides it; INTRUS_DEPS_REPORT fails once
# with all of them, because a fresh machine is the common case and one configure run
# should say everything that is missing (scripts/install-deps.sh installs it all).

# _INTRUS_MISSING(WHAT, PACKAGES)
m4_define([_INTRUS_MISSING], [intrus_missing="$intrus_missing
  $1: apt-get install $2"])

# INTRUS_CHECK_LTDL: GNU Libtool's dlopen library, which loads the plugins. Sets LTDL_LIBS.
AC_DEFUN([INTRUS_CHECK_LTDL], [
AC_CHECK_HEADER([ltdl.h],
  [AC_CHECK_LIB([ltdl], [lt_dladvise_init], [LTDL_LIBS="-lltdl"],
     [_INTRUS_MISSING([libltdl (GNU Libtool's dlopen library)], [libltdl-dev])])],
  [_INTRUS_MISSING([ltdl.h (GNU Libtool's dlopen library)], [libltdl-dev])])
AC_SUBST([LTDL_LIBS])
])

# INTRUS_CHECK_OPENBLAS: CBLAS from OpenBLAS (pkg-config, else any -lopenblas/-lblas
# with cblas_sgemm), and cblas.h. Sets OPENBLAS_CFLAGS, OPENBLAS_LIBS.
AC_DEFUN([INTRUS_CHECK_OPENBLAS], [
PKG_CHECK_MODULES([OPENBLAS], [openblas], [],
  [AC_SEARCH_LIBS([cblas_sgemm], [openblas blas], [OPENBLAS_LIBS="$LIBS"; LIBS=""],
     [_INTRUS_MISSING([OpenBLAS (cblas_sgemm)], [libopenblas-dev])])])
intrus_save_CFLAGS="$CFLAGS"; CFLAGS="$CFLAGS $OPENBLAS_CFLAGS"
AC_CHECK_HEADER([cblas.h], [], [_INTRUS_MISSING([cblas.h (OpenBLAS headers)], [libopenblas-dev])])
CFLAGS="$intrus_save_CFLAGS"
])

# INTRUS_CHECK_LIBCONFIG: experiment files. Sets LIBCONFIG_CFLAGS, LIBCONFIG_LIBS.
AC_DEFUN([INTRUS_CHECK_LIBCONFIG], [
PKG_CHECK_MODULES([LIBCONFIG], [libconfig >= 1.5], [],
  [_INTRUS_MISSING([libconfig >= 1.5], [libconfig-dev])])
])

# INTRUS_CHECK_UTF8PROC: Unicode normalisation and categories for the tokenizer and
# BLEU. Sets UTF8PROC_CFLAGS, UTF8PROC_LIBS.
AC_DEFUN([INTRUS_CHECK_UTF8PROC], [
PKG_CHECK_MODULES([UTF8PROC], [libutf8proc], [],
  [AC_CHECK_HEADER([utf8proc.h],
     [AC_CHECK_LIB([utf8proc], [utf8proc_map], [UTF8PROC_LIBS="-lutf8proc"],
        [_INTRUS_MISSING([utf8proc], [libutf8proc-dev])])],
     [_INTRUS_MISSING([utf8proc], [libutf8proc-dev])])])
])

# INTRUS_CHECK_ZLIB: gzip-compressed corpora. Sets ZLIB_CFLAGS, ZLIB_LIBS.
AC_DEFUN([INTRUS_CHECK_ZLIB], [
PKG_CHECK_MODULES([ZLIB], [zlib], [], [_INTRUS_MISSING([zlib], [zlib1g-dev])])
])

# INTRUS_CHECK_MECAB: MeCab segments Japanese into words; its dictionary is found at
# run time. Sets MECAB_LIBS.
AC_DEFUN([INTRUS_CHECK_MECAB], [
AC_CHECK_HEADER([mecab.h],
  [AC_CHECK_LIB([mecab], [mecab_new2], [MECAB_LIBS="-lmecab"],
     [_INTRUS_MISSING([MeCab], [libmecab-dev mecab-ipadic-utf8])])],
  [_INTRUS_MISSING([mecab.h], [libmecab-dev mecab-ipadic-utf8])])
AC_SUBST([MECAB_LIBS])
])

# INTRUS_CHECK_CAIRO: decoding-order pictures and learning curves, PNG and SVG. Sets
# CAIRO_CFLAGS, CAIRO_LIBS.
AC_DEFUN([INTRUS_CHECK_CAIRO], [
PKG_CHECK_MODULES([CAIRO], [cairo >= 1.14], [], [_INTRUS_MISSING([cairo], [libcairo2-dev])])
])

# INTRUS_CHECK_PNG: libpng 1.6, the PNG reader of the image layer (core/image); cairo
# pulls it in too, but the image layer links it itself. Sets PNG_CFLAGS, PNG_LIBS.
AC_DEFUN([INTRUS_CHECK_PNG], [
PKG_CHECK_MODULES([PNG], [libpng >= 1.6], [],
  [AC_CHECK_HEADER([png.h],
     [AC_CHECK_LIB([png16], [png_set_chunk_malloc_max], [PNG_LIBS="-lpng16"],
        [_INTRUS_MISSING([libpng >= 1.6], [libpng-dev])])],
     [_INTRUS_MISSING([png.h (libpng >= 1.6)], [libpng-dev])])])
])

# INTRUS_DEPS_REPORT: stop with every missing dependency at once.
AC_DEFUN([INTRUS_DEPS_REPORT], [
AS_IF([test "x$intrus_missing" != "x"],
  [AC_MSG_ERROR([missing dependencies:$intrus_missing
Run scripts/install-deps.sh (as root) to install everything intrus needs.])])
])

# INTRUS_CHECK_MPI: data-parallel training (./configure --with-mpi). Off by default, and
# then nothing of MPI is compiled in. With --with-mpi: the flags from pkg-config's
# ompi-c (Open MPI), else from `mpicc --showme` (Open MPI's wrapper), else mpicc's
# -show (MPICH); the header and MPI_Init_thread must then compile and link. Sets
# MPI_CFLAGS, MPI_LIBS, HAVE_MPI and the automake conditional INTRUS_MPI.
AC_DEFUN([INTRUS_CHECK_MPI], [
AC_ARG_WITH([mpi],
  [AS_HELP_STRING([--with-mpi], [data-parallel training over MPI (Open MPI: openmpi-bin, libopenmpi-dev) @<:@default=no@:>@])],
  [], [with_mpi=no])
intrus_mpi=no
AS_IF([test "x$with_mpi" != xno], [
  PKG_CHECK_MODULES([MPI], [ompi-c], [intrus_mpi=yes], [
    AC_PATH_PROG([MPICC], [mpicc])
    AS_IF([test -n "$MPICC"], [
      MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null`
      MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
      AS_IF([test -z "$MPI_LIBS"], [
        # MPICH: "mpicc -compile_info" / "-link_info" print the whole command line.
        MPI_CFLAGS=`$MPICC -compile_info 2>/dev/null | cut -d' ' -f2- | tr ' ' '\n' | grep -E '^-(I|D)' | tr '\n' ' '`
        MPI_LIBS=`$MPICC -link_info 2>/dev/null | cut -d' ' -f2- | tr ' ' '\n' | grep -E '^-(L|l|Wl)' | tr '\n' ' '`])
      intrus_mpi=yes])])
  AS_IF([test "x$intrus_mpi" = xyes], [
    intrus_save_CFLAGS="$CFLAGS"; intrus_save_LIBS="$LIBS"
    CFLAGS="$CFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
    AC_MSG_CHECKING([whether an MPI program compiles and links])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                    [[int p; return MPI_Init_thread(0, 0, MPI_THREAD_FUNNELED, &p);]])],
      [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); intrus_mpi=no])
    CFLAGS="$intrus_save_CFLAGS"; LIBS="$intrus_save_LIBS"])
  AS_IF([test "x$intrus_mpi" != xyes],
    [AC_MSG_ERROR([--with-mpi: no usable MPI (mpi.h and MPI_Init_thread through pkg-config ompi-c or mpicc).
Install Open MPI: apt-get install openmpi-bin libopenmpi-dev])])
  AC_DEFINE([HAVE_MPI], [1], [Define to 1 to train data-parallel over MPI.])
  AC_PATH_PROG([MPIRUN], [mpirun])])
AC_SUBST([MPI_CFLAGS])
AC_SUBST([MPI_LIBS])
AC_SUBST([MPIRUN])
AM_CONDITIONAL([INTRUS_MPI], [test "x$intrus_mpi" = xyes])
])
