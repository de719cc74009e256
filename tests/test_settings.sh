#!/bin/sh
# The settings reference cannot drift from the readers (core/cli/settings_doc.c,
# docs/settings.md, `intrus config`): every setting a reader reads in any shipped
# experiment or table file is described, every description is read somewhere, and
# docs/settings.md is what scripts/gen-settings-doc.sh writes; a reader that accepts an
# undescribed setting (tests/settings/undescribed.c) fails the check with the line to
# add; every setting name the sources read is described; and `intrus config` prints an
# effective configuration that reads back as itself, without data or a run directory.
# Reads configs and builds models only: a few seconds.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0

# 1. The shipped files: all described, the reference up to date.
if sh "$src/scripts/gen-settings-doc.sh" --check "$intrus" > "$tmp/check.out" 2>&1; then
  ok "every setting of $(sh "$src/scripts/gen-settings-doc.sh" --files | wc -l) files is described; docs/settings.md is up to date"
else
  cat "$tmp/check.out" >&2
  bad "scripts/gen-settings-doc.sh --check (the lines above say what to add or run)"
fi

# 2. A reader that accepts a setting the reference does not describe fails the check,
# and the message names the setting, where it was read and the line to add where.
cat > "$tmp/undescribed.cfg" <<'CFG'
name = "undescribed";
data: { kind = "synthetic"; };
model: { d_model = 16;
         encoder: { plugin = "undescribed"; width = 16; };
         decoder: { plugin = "autoregressive"; layers = 1; heads = 2; }; };
train: { steps = 1; };
CFG
if "$intrus" config --check -p "$build/tests/settings" "$tmp/undescribed.cfg" \
  > "$tmp/und.out" 2>&1; then
  bad "an undescribed setting passes intrus config --check"
else
  if grep -qF "$tmp/undescribed.cfg:4: model.encoder(undescribed).width (integer in [1, 64]; default 8) is read but the settings reference does not describe it" "$tmp/und.out" &&
    grep -qF '{"model.encoder(undescribed).width", "<what it means, in one line>"},' "$tmp/und.out" &&
    grep -qF 'to experiment_settings[] in core/cli/settings_doc.c' "$tmp/und.out"; then
    ok "an undescribed setting fails the check, naming the line to add and where"
  else
    cat "$tmp/und.out" >&2
    bad "the message about an undescribed setting"
  fi
fi
# Printing still works for it, marked as missing from the reference.
expect "intrus config prints an undescribed setting, marked" \
  sh -c "'$intrus' config -p '$build/tests/settings' '$tmp/undescribed.cfg' |
         grep -qF '# (model.encoder(undescribed).width: not in the settings reference)'"

# 3. A description no file reads is reported (one file cannot read them all).
if "$intrus" config --check "$src/experiments/toy-copy.cfg" > "$tmp/stale.out" 2>&1; then
  bad "described settings nobody read pass the check"
else
  expect "a description no checked file reads is reported" \
    grep -qF 'experiment_settings[]: train.phases is described, but no experiment file checked reads it' \
    "$tmp/stale.out"
fi

# 4. Every setting name read in the sources (a literal key of an intrus_cfg_ call in core/
# or plugins/) has a line, even where no shipped file reaches its reader (an optional
# group no file has). By name only: a key named as a described one elsewhere passes here,
# and is caught by 1. once a file sets it.
described=$(sed -n 's/^ *{"\([^"]*\)",.*/\1/p' "$src/core/cli/settings_doc.c" | sed 's/.*[.]//')
missing=0
for fk in $(cd "$src" && grep -rnoE 'intrus_cfg_(int|int_req|int_range|double|double_req|double_range|bool|string|string_req|choice|group|group_req|list_len|list_group|strings|ints|bools|has|mark_read|error)\([^,]+, *"[A-Za-z0-9_.-]+"' core plugins --include=*.c |
  sed 's/^\([^:]*:[0-9]*\):.*"\([^"]*\)"$/\1@\2/'); do
  key=${fk#*@}
  if ! echo "$described" | grep -qxF "$key"; then
    echo "${fk%@*}: the setting '$key' is read, but no line of core/cli/settings_doc.c describes a setting of that name: add its line there (and, if no shipped experiment sets it, a file that does to tests/data/settings/)" >&2
    missing=$((missing + 1))
  fi
done
if [ $missing -eq 0 ]; then ok "every setting name read in core/ and plugins/ is described"
else bad "$missing setting names read in the sources are not described"; fi

# 5. The effective configuration is a valid file that reads back as itself (the notes
# aside: "# default" marks what the first file left out), for an experiment with phases,
# an image experiment and a table; read without data or a run directory.
mkdir -p "$tmp/cwd"
for f in experiments/quickstart-intrus.cfg experiments/paper/captions/intrus.cfg \
  experiments/small/table1.cfg; do
  name=$(echo "$f" | tr / _)
  if (cd "$tmp/cwd" && "$intrus" config "$src/$f") > "$tmp/$name.1" 2> "$tmp/$name.err" &&
    "$intrus" config "$tmp/$name.1" > "$tmp/$name.2" 2>> "$tmp/$name.err"; then
    sed -e 1d -e 's/;  # default$/;/' "$tmp/$name.1" > "$tmp/$name.a"
    sed -e 1d "$tmp/$name.2" > "$tmp/$name.b"
    expect "intrus config $f reads back as itself" cmp -s "$tmp/$name.a" "$tmp/$name.b"
  else
    cat "$tmp/$name.err" >&2
    bad "intrus config $f"
  fi
done
expect "intrus config wrote nothing (no runs/ directory)" test -z "$(ls -A "$tmp/cwd")"
expect "every setting of the printed quickstart has its meaning" \
  sh -c "! grep -q 'not in the settings reference' '$tmp/experiments_quickstart-intrus.cfg.1'"

# 6. A bad value is still an error, with the file and line.
sed 's/steps = 1;/steps = 0;/' "$tmp/undescribed.cfg" | sed 's/"undescribed"; width = 16;/"transformer";/' \
  > "$tmp/bad.cfg"
"$intrus" config "$tmp/bad.cfg" > /dev/null 2> "$tmp/bad.err"
rc=$?
expect "a value out of range: exit 3 naming file:line and the setting" \
  sh -c "[ $rc -eq 3 ] && grep -qF '$tmp/bad.cfg:6: train.steps: 0 is out of range' '$tmp/bad.err'"

finish test_settings.sh
