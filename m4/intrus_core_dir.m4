# INTRUS_CORE_DIR
# ---------------
# The library's sources live in core/. Autoconf's generated code removes stray core
# dumps with `rm -f core ...` after every test program and in its exit trap, which
# fails on a directory: each check printed "cannot remove 'core'", and the trap's
# `rm -f core ... && rm -f -r conftest* confdefs* ...` stopped before the second rm,
# leaving confdefs.h behind (which `make distcheck` rejects). configure's own rm is
# therefore a function that leaves a *directory* named core alone and passes
# everything else to the real rm unchanged.
AC_DEFUN([INTRUS_CORE_DIR], [
rm () {
  for intrus_rm_arg do
    shift
    if test "x$intrus_rm_arg" = xcore && test -d core; then :; else
      set -- "$[@]" "$intrus_rm_arg"
    fi
  done
  command rm "$[@]"
}
])
