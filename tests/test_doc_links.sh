#!/bin/sh
# The documents' links resolve. In every tracked markdown file, each link or picture to a
# local file, [text](path) or ![alt](path), names a file or folder that exists (relative
# to the linking file), and a #section names a heading of the linked page (GitHub's
# anchors: lower case, punctuation dropped, spaces as hyphens). In every tracked text
# file (docs, sources, experiment files, scripts), each mention of a page as
# docs/NAME.md must name a page that exists, and a section quoted after it
# (docs/NAME.md, "Section" or docs/NAME.md ("Section")) must be a heading or a bold
# run-in title of that page; and docs/README.md, the index, links every page under
# docs/. Docs move; this keeps what points at them honest.
# Reads the tracked files of a git checkout (a release tarball has no git: skipped).
# Needs python3 (standard library only).
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

need_python test_doc_links
if ! command -v git >/dev/null 2>&1 || ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  echo "test_doc_links: $src is not a git checkout (a release tarball?): skipped"
  exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
git -C "$src" ls-files -z > "$tmp/files" || { bad "git ls-files failed in $src"; finish test_doc_links; exit 1; }
cat > "$tmp/check.py" <<'EOF'
import os, re, sys, unicodedata

root = sys.argv[1]
files = [f for f in sys.stdin.read().split('\0') if f]
problems = []
# A link must name a tracked file or a folder holding one: a file that is only in this
# checkout would be missing from every clone.
tracked = set(files)
for f in files:
    d = os.path.dirname(f)
    while d and d not in tracked:
        tracked.add(d)
        d = os.path.dirname(d)

def slug(title):
    # GitHub's heading anchors: markup dropped, lower case, letters, digits, spaces,
    # hyphens and underscores kept, spaces to hyphens.
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', title)
    t = t.replace('`', '').lower()
    t = ''.join(c for c in t if c in ' -_' or unicodedata.category(c)[0] in 'LN')
    return t.replace(' ', '-')

headings_cache = {}
def headings(path):
    """Anchors and plain titles of a markdown file's headings, and its bold run-ins."""
    if path not in headings_cache:
        anchors, titles, seen = set(), set(), {}
        in_code = False
        with open(path, encoding='utf-8', errors='replace') as f:
            for line in f:
                if line.startswith('```'):
                    in_code = not in_code
                    continue
                if in_code:
                    continue
                m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
                if m:
                    t = m.group(1)
                    titles.add(t)
                    s = slug(t)
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    anchors.add(s if n == 0 else '%s-%d' % (s, n))
                for b in re.findall(r'\*\*(.+?)\*\*', line):
                    titles.add(b)
        headings_cache[path] = (anchors, titles)
    return headings_cache[path]

def text_of(path):
    try:
        with open(os.path.join(root, path), encoding='utf-8') as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None

link = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
linked = {}  # file -> the tracked paths its links name
for f in files:
    if not f.endswith('.md'):
        continue
    text = text_of(f)
    if text is None:
        continue
    # Links inside code (fenced blocks and `spans`) are examples, not links.
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    text = re.sub(r'`[^`\n]*`', '', text)
    for target in link.findall(text):
        if re.match(r'[a-z][a-z0-9+.-]*:', target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition('#')
        rel = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        linked.setdefault(f, set()).add(rel)
        full = os.path.join(root, rel)
        if rel not in tracked:
            problems.append('%s: link to %s: no such file' % (f, target))
            continue
        if anchor and full.endswith('.md') and os.path.isfile(full):
            if anchor not in headings(full)[0]:
                problems.append('%s: link to %s: no heading with the anchor #%s' %
                                (f, target, anchor))

# docs/README.md is the index: it links every page under docs/.
if 'docs/README.md' in tracked:
    for f in files:
        if f.startswith('docs/') and f.endswith('.md') and f != 'docs/README.md' and \
                f not in linked.get('docs/README.md', ()):
            problems.append('docs/README.md: does not link %s (the index lists every doc)' % f)

textual = re.compile(r'\.(md|c|h|cfg|sh|am|py|in|inc|txt)$|(^|/)(README|Makefile[^/]*)$')
mention = re.compile(r'(?<![\w./-])docs/([A-Za-z0-9_./-]+?\.md)`?\)?(?:,? *\(?"([^"\n]+)")?')
for f in files:
    if not textual.search(f) or f == 'tests/test_doc_links.sh':  # its comments: docs/NAME.md
        continue
    text = text_of(f)
    if text is None:
        continue
    for m in mention.finditer(text):
        page = 'docs/' + m.group(1)
        line = text.count('\n', 0, m.start()) + 1
        full = os.path.join(root, page)
        if page not in tracked:
            problems.append('%s:%d: mentions %s: no such page' % (f, line, page))
            continue
        section = m.group(2)
        if section and page.endswith('.md'):
            anchors, titles = headings(full)
            # a title, or its beginning up to a colon or a bracket ("Quality" names
            # "Quality: INTRUS against ..."); a run-in title's full stop is not part of it
            names = {t.rstrip('.') for t in titles}
            names |= {re.split(r'[:(]', t)[0].rstrip(' ,') for t in titles}
            if section.rstrip('.') not in names:
                problems.append('%s:%d: mentions %s, "%s": no such heading or bold title there'
                                % (f, line, page, section))

for p in problems:
    print(p)
print('checked %d files' % len(files), file=sys.stderr)
EOF
out=$("$py" "$tmp/check.py" "$src" < "$tmp/files")
rc=$?
if [ $rc -ne 0 ]; then
  bad "the link checker itself failed (status $rc)"
elif [ -n "$out" ]; then
  echo "$out" | while IFS= read -r l; do echo "FAIL: $l" >&2; done
  bad "$(echo "$out" | wc -l) links or mentions do not resolve (listed above)"
else
  ok "every markdown link, picture, section anchor and docs/*.md mention resolves"
fi
finish test_doc_links
