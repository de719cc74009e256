# INTRUS_WARNINGS: the warning flags every file is built with; --enable-werror (CI)
# makes them errors. Sets WARN_CFLAGS.
AC_DEFUN([INTRUS_WARNINGS], [
AC_ARG_ENABLE([werror], [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors (CI does)])],
  [], [enable_werror=no])
WARN_CFLAGS="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter"
AS_IF([test "x$enable_werror" = "xyes"], [WARN_CFLAGS="$WARN_CFLAGS -Werror"])
AC_SUBST([WARN_CFLAGS])
])

# INTRUS_SANITIZERS: --enable-sanitizers builds everything with AddressSanitizer and
# UBSan (the `make check` variant CI runs). Sets SAN_CFLAGS.
AC_DEFUN([INTRUS_SANITIZERS], [
AC_ARG_ENABLE([sanitizers], [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UBSan])],
  [], [enable_sanitizers=no])
AS_IF([test "x$enable_sanitizers" = "xyes"],
  [SAN_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"])
AC_SUBST([SAN_CFLAGS])
])

# INTRUS_OPENMP: OpenMP for the elementwise ops; without it they run on one thread.
AC_DEFUN([INTRUS_OPENMP], [
AC_OPENMP
AS_IF([test "x$OPENMP_CFLAGS" = "x" && test "x$enable_openmp" != "xno"],
  [AC_MSG_WARN([no OpenMP support found: elementwise ops will run on one thread])])
])
