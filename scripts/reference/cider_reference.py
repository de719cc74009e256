#!/usr/bin/python3
"""Reference CIDEr-D for tests/test_cider.c: coco-caption's scorer and an emulation of
its PTBTokenizer step, in plain Python 3 (standard library only).

Run by hand, never by the tests:

    /usr/bin/python3 scripts/reference/cider_reference.py --ref R1 [--ref R2 ...] --hyp H
        [--sigma 6] [--images]      CIDEr-D x 100 (and with --images every image's score)
    /usr/bin/python3 scripts/reference/cider_reference.py --tokenize FILE
                                    every line's tokens as coco-caption scores them
    /usr/bin/python3 scripts/reference/cider_reference.py --selftest
                                    the tokenizer against CoreNLP 3.4.1's own test gold

Files are UTF-8, one image per line, line-aligned; an empty line in a reference file is
a reference that image does not have (as `intrus eval cider` reads them).

Two independent halves, as plugins/eval-cider does it in C:

1. Tokenisation. coco-caption's pycocoevalcap/tokenizer/ptbtokenizer.py runs Stanford
   CoreNLP 3.4.1's PTBTokenizer with -preserveLines -lowerCase over all captions joined
   by newlines, then drops the tokens in PUNCTUATIONS. There is no Java here, so this
   file re-implements that tokenizer: the macro definitions and rules below are copied
   verbatim from CoreNLP v3.4.1's src/edu/stanford/nlp/process/PTBLexer.flex (non-ASCII
   characters written as \\uXXXX), and the scanner follows JFlex's semantics: at each
   position the rule with the longest match wins (trailing context r1/r2 counts in the
   length, only r1 is the token), ties to the earlier rule; %caseless makes literal
   letters outside character classes match both cases. Matching is done with Python's
   re module (fullmatch over every candidate end, so alternation order does not matter),
   on UTF-16 code units as Java sees them; the rule actions are transcribed from the
   .flex file with PTBLexer's default options (americanize off, ptb3 escaping on,
   latexQuotes, untokenizable=firstDelete, traditional not strict treebank 3) plus the
   tokenizeNLs that -preserveLines adds. PTBTokenizer.main then lowercases every token
   with String.toLowerCase(Locale.ENGLISH) (here str.lower()), after normalisation: so
   "(" -> "-LRB-" -> "-lrb-", which is NOT in coco's (upper-case) PUNCTUATIONS and stays.
   Each caption is scanned on its own followed by one newline (in coco the next caption
   follows; see docs/cider.md for the two rules that can look past the newline).

2. Scoring: CiderScorer of tylin/coco-caption pycocoevalcap/cider/cider_scorer.py
   (master, 3a9afb2), transcribed line by line with math in place of numpy: n = 4,
   sigma = 6, document frequencies over the references of the whole test set, the
   CIDEr-D clipping min(vec_hyp, vec_ref) * vec_ref, the Gaussian length penalty, and
   its quirk that `length` counts bigrams (n == 1 is the 0-based order index).
   Python 2 split semantics (str.split() on ASCII whitespace) as coco-caption ran.
"""
import argparse
import math
import re
import sys
import unicodedata
from collections import defaultdict

# ---- 1. PTBLexer (CoreNLP 3.4.1) -------------------------------------------------------

# The macro definitions of PTBLexer.flex (v3.4.1), verbatim (FRACSTB3 is unused).
MACROS = {
    'SGML': r'''\<([!\?][A-Za-z\-][^>\r\n]*|[A-Za-z][A-Za-z0-9_:\.\-]*([ ]+([A-Za-z][A-Za-z0-9_:\.\-]*|[A-Za-z][A-Za-z0-9_:\.\-]*[ ]*=[ ]*('[^']*'|\"[^\"]*\")))*[ ]*\/?|\/[A-Za-z][A-Za-z0-9_:\.\-]*)[ ]*\>''',
    'SPMDASH': r'&(MD|mdash|ndash);|[\u0096\u0097\u2013\u2014\u2015]',
    'SPAMP': r'&amp;',
    'SPPUNC': r'&(HT|TL|UR|LR|QC|QL|QR|odq|cdq|#[0-9]+);',
    'SPLET': r'&[aeiouAEIOU](acute|grave|uml);',
    'SPACE': r'[ \t\u00A0\u2000-\u200A\u3000]',
    'SPACES': r'{SPACE}+',
    'NEWLINE': r'\r|\r?\n|\u2028|\u2029|\u000B|\u000C|\u0085',
    'SPACENL': r'({SPACE}|{NEWLINE})',
    'SPACENLS': r'{SPACENL}+',
    'SENTEND': r'{SPACENL}({SPACENL}|[:uppercase:]|{SGML})',
    'DIGIT': r'[:digit:]|[\u07C0-\u07C9]',
    'DATE': r'{DIGIT}{1,2}[\-\/]{DIGIT}{1,2}[\-\/]{DIGIT}{2,4}',
    'NUM': r'{DIGIT}+|{DIGIT}*([.:,\u00AD\u066B\u066C]{DIGIT}+)+',
    'NUMBER': r'[\-+]?{NUM}',
    'SUBSUPNUM': r'[\u207A\u207B\u208A\u208B]?([\u2070\u00B9\u00B2\u00B3\u2074-\u2079]+|[\u2080-\u2089]+)',
    'FRAC': r'({DIGIT}{1,4}[- \u00A0])?{DIGIT}{1,4}(\\?\/|\u2044){DIGIT}{1,4}',
    'FRACSTB3': r'({DIGIT}{1,4}-)?{DIGIT}{1,4}(\\?\/|\u2044){DIGIT}{1,4}',
    'FRAC2': r'[\u00BC\u00BD\u00BE\u2153-\u215E]',
    'DOLSIGN': r'([A-Z]*\$|#)',
    'DOLSIGN2': r'[\u00A2\u00A3\u00A4\u00A5\u0080\u20A0\u20AC\u060B\u0E3F\u20A4\uFFE0\uFFE1\uFFE5\uFFE6]',
    'LETTER': r'([:letter:]|{SPLET}|[\u00AD\u0237-\u024F\u02C2-\u02C5\u02D2-\u02DF\u02E5-\u02FF\u0300-\u036F\u0370-\u037D\u0384\u0385\u03CF\u03F6\u03FC-\u03FF\u0483-\u0487\u04CF\u04F6-\u04FF\u0510-\u0525\u055A-\u055F\u0591-\u05BD\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7\u0615-\u061A\u063B-\u063F\u064B-\u065E\u0670\u06D6-\u06EF\u06FA-\u06FF\u070F\u0711\u0730-\u074F\u0750-\u077F\u07A6-\u07B1\u07CA-\u07F5\u07FA\u0900-\u0903\u093C\u093E-\u094E\u0951-\u0955\u0962-\u0963\u0981-\u0983\u09BC-\u09C4\u09C7\u09C8\u09CB-\u09CD\u09D7\u09E2\u09E3\u0A01-\u0A03\u0A3C\u0A3E-\u0A4F\u0A81-\u0A83\u0ABC-\u0ACF\u0B82\u0BBE-\u0BC2\u0BC6-\u0BC8\u0BCA-\u0BCD\u0C01-\u0C03\u0C3E-\u0C56\u0D3E-\u0D44\u0D46-\u0D48\u0E30-\u0E3A\u0E47-\u0E4E\u0EB1-\u0EBC\u0EC8-\u0ECD])',
    'WORD': r'{LETTER}({LETTER}|{DIGIT})*([.!?]{LETTER}({LETTER}|{DIGIT})*)*',
    'FILENAME_EXT': r'bat|bmp|c|class|cgi|cpp|dll|doc|docx|exe|gif|gz|h|htm|html|jar|java|jpeg|jpg|mov|mp3|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|x|xml|zip',
    'FILENAME': r'({LETTER}|{DIGIT})+([.]({LETTER}|{DIGIT})+)*([.]{FILENAME_EXT})',
    'THING': r'([dDoOlL]{APOSETCETERA}([:letter:]|[:digit:]))?([:letter:]|[:digit:])+({HYPHEN}([dDoOlL]{APOSETCETERA}([:letter:]|[:digit:]))?([:letter:]|[:digit:])+)*',
    'THINGA': r'[A-Z]+(([+&]|{SPAMP})[A-Z]+)+',
    'THING3': r'[A-Za-z0-9]+(-[A-Za-z]+){0,2}(\\?\/[A-Za-z0-9]+(-[A-Za-z]+){0,2}){1,2}',
    'APOS': r"['\u0092\u2019]|&apos;",
    'APOSETCETERA': r'{APOS}|[`\u0091\u2018\u201B]',
    'HTHING': r'[A-Za-z0-9][A-Za-z0-9.,\u00AD]*(-([A-Za-z0-9\u00AD]+|{ACRO2}\.))+',
    'REDAUX': r'{APOS}([msdMSD]|re|ve|ll)',
    'SWORD': r'[A-Za-z\u00AD]*[A-MO-Za-mo-z](\u00AD)*',
    'SREDAUX': r'n{APOSETCETERA}t',
    'APOWORD': r"{APOS}n{APOS}?|[lLdDjJ]{APOS}|Dunkin{APOS}|somethin{APOS}|ol{APOS}|{APOS}em|[A-HJ-XZn]{APOSETCETERA}[:letter:]{2}[:letter:]*|{APOS}[2-9]0s|{APOS}till?|[:letter:][:letter:]*[aeiouyAEIOUY]{APOSETCETERA}[aeiouA-Z][:letter:]*|{APOS}cause|cont'd\.?|'twas|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l|O{APOSETCETERA}o",
    'APOWORD2': r'y{APOS}',
    'FULLURL': r'https?:\/\/[^ \t\n\f\r\"<>|(){}]+[^ \t\n\f\r\"<>|.!?(){},-]',
    'LIKELYURL': r'''((www\.([^ \t\n\f\r\"<>|.!?(){},]+\.)+[a-zA-Z]{2,4})|(([^ \t\n\f\r\"`'<>|.!?(){},-_$]+\.)+(com|net|org|edu)))(\/[^ \t\n\f\r\"<>|()]+[^ \t\n\f\r\"<>|.!?(){},-])?''',
    'EMAIL': r'(&lt;|<)?[a-zA-Z0-9][^ \t\n\f\r\"<>|()\u00A0{}]*@([^ \t\n\f\r\"<>|(){}.\u00A0]+\.)*([^ \t\n\f\r\"<>|(){}.\u00A0]+)(&gt;|>)?',
    'TWITTER_NAME': r'@[a-zA-Z_][a-zA-Z_0-9]*',
    'TWITTER_CATEGORY': r'#{LETTER}+',
    'TWITTER': r'{TWITTER_NAME}|{TWITTER_CATEGORY}',
    'ABMONTH': r'Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec',
    'ABDAYS': r'Mon|Tue|Tues|Wed|Thu|Thurs|Fri',
    'ABSTATE': r'Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|[L]a|[M]ass|Md|Mich|Minn|[M]iss|Mo|Mont|Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|Vt|[W]ash|Wisc?|Wyo',
    'ABCOMP': r'Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys',
    'ABNUM': r'tel|est|ext|sq',
    'ABPTIT': r'Jr|Sr|Bros|(Ed|Ph)\.D|Blvd|Rd|Esq',
    'ABBREV1': r'({ABMONTH}|{ABDAYS}|{ABSTATE}|{ABCOMP}|{ABNUM}|{ABPTIT}|etc|al|seq|Bldg)\.',
    'ACRO': r'[A-Za-z](\.[A-Za-z])*|(Canada|Sino|Korean|EU|Japan|non)-U\.S|U\.S\.-(U\.K|U\.S\.S\.R)',
    'ACRO2': r'[A-Za-z](\.[A-Za-z])+|(Canada|Sino|Korean|EU|Japan|non)-U\.S|U\.S\.-(U\.K|U\.S\.S\.R)',
    'ABTITLE': r'Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl|Pvt|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens|Insp|Mlle|Mme|Msgr|Sfc',
    'ABCOMP2': r'Invt|Elec|Natl|M[ft]g|Dept',
    'ABBREV4': r'{ABTITLE}|vs|Alex|Wm|Jos|Cie|a\.k\.a|cf|TREAS|Ph|{ACRO}|{ABCOMP2}',
    'ABBREV2': r'{ABBREV4}\.',
    'ACRONYM': r'({ACRO})\.',
    'ABBREV3': r'(ca|figs?|prop|nos?|art|bldg|prop|pp|op)\.',
    'PHONE': r'(\([0-9]{2,3}\)[ \u00A0]?|(\+\+?)?([0-9]{2,4}[\- \u00A0])?[0-9]{2,4}[\- \u00A0])[0-9]{3,4}[\- \u00A0]?[0-9]{3,5}|((\+\+?)?[0-9]{2,4}\.)?[0-9]{2,4}\.[0-9]{3,4}\.[0-9]{3,5}',
    'FAKEDUCKFEET': r'<<|>>',
    'LESSTHAN': r'<|&lt;',
    'GREATERTHAN': r'>|&gt;',
    'HYPHEN': r'[-_\u058A\u2010\u2011]',
    'HYPHENS': r'\-+',
    'LDOTS': r'\.{3,5}|(\.[ \u00A0]){2,4}\.|[\u0085\u2026]',
    'ATS': r'@+',
    'UNDS': r'_+',
    'ASTS': r'\*+|(\\\*){1,3}',
    'HASHES': r'#+',
    'FNMARKS': r'{ATS}|{HASHES}|{UNDS}',
    'INSENTP': r'[,;:\u3001]',
    'QUOTES': r"{APOS}|''|[`\u2018\u2019\u201A\u201B\u201C\u201D\u0091\u0092\u0093\u0094\u201E\u201F\u2039\u203A\u00AB\u00BB]{1,2}",
    'DBLQUOT': r'\"|&quot;',
    'TBSPEC': r'-(RRB|LRB|RCB|LCB|RSB|LSB)-|C\.D\.s|pro-|anti-|S(&|&amp;)P-500|S(&|&amp;)Ls|Cap{APOS}n|c{APOS}est',
    'TBSPEC2': r'{APOS}[0-9][0-9]',
    'SMILEY': r"[<>]?[:;=][\-o\*']?[\(\)DPdpO\\{@\|\[\]]",
    'ASIANSMILEY': r"[\^x=~<>]\.\[\^x=~<>]|[\-\^x=~<>']_[\-\^x=~<>']|\([\-\^x=~<>'][_.]?[\-\^x=~<>']\)|\([\^x=~<>']-[\^x=~<>'`]\)",
    'MISCSYMBOL': r'[+%&~\^|\\\u00A6\u00A7\u00A8\u00A9\u00AC\u00AE\u00AF\u00B0-\u00B3\u00B4-\u00BA\u00D7\u00F7\u0387\u05BE\u05C0\u05C3\u05C6\u05F3\u05F4\u0600-\u0603\u0606-\u060A\u060C\u0614\u061B\u061E\u066A\u066D\u0703-\u070D\u07F6\u07F7\u07F8\u0964\u0965\u0E4F\u1FBD\u2016\u2017\u2020-\u2023\u2030-\u2038\u203B\u203E-\u2042\u2044\u207A-\u207F\u208A-\u208E\u2100-\u214F\u2190-\u21FF\u2200-\u2BFF\u3012\u30FB\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65\uFF65]',
}

# The rules of PTBLexer.flex in file order (the strict-treebank-3 FRACSTB3 rule, inactive
# in the traditional state the tokenizer runs in, left out), with their actions:
#   plain        the text                    softhyph  the text without U+00AD (or "-")
#   pushback N   the text less its last N code units, which are scanned again
#   nbsp         spaces -> U+00A0             amp       "&amp;" (any case) -> "&"
#   quote_l/r    latexQuotes(text, probablyLeft)
#   lit X        X                            skip      no token
#   acronym      2 units: the letter, the period again; else the text, the period again
#   abbrev1      the text, then its final period scanned again
RULES = [
    (r'c[+][+]', 'plain'),
    (r'(c|f)#', 'plain'),
    (r'cannot', 'pushback', 3),
    (r"'twas", 'pushback', 3),
    (r"'tis", 'pushback', 2),
    (r'gonna|gotta|lemme|gimme|wanna', 'pushback', 2),
    (r'{SGML}', 'nbsp'),
    (r'{SPMDASH}', 'lit', '--'),
    (r'{SPAMP}', 'amp'),
    (r'{SPPUNC}', 'plain'),
    (r'{WORD}/{REDAUX}', 'softhyph'),
    (r'{SWORD}/{SREDAUX}', 'softhyph'),
    (r'{WORD}', 'softhyph'),
    (r'{APOWORD}', 'plain'),
    (r'{APOWORD2}/[:letter:]', 'plain'),
    (r'{FULLURL}', 'plain'),
    (r'{LIKELYURL}', 'plain'),
    (r'{EMAIL}', 'plain'),
    (r'{TWITTER}', 'plain'),
    (r'{REDAUX}/[^A-Za-z]', 'quote_r'),
    (r'{SREDAUX}/[^A-Za-z]', 'quote_r'),
    (r'{DATE}', 'plain'),
    (r'{NUMBER}', 'softhyph'),
    (r'{SUBSUPNUM}', 'plain'),
    (r'{FRAC}', 'nbsp'),
    (r'{FRAC2}', 'fraction'),
    (r'{TBSPEC}', 'amp'),
    (r'{THING3}', 'plain'),
    (r'{DOLSIGN}', 'plain'),
    (r'{DOLSIGN2}', 'currency'),
    (r'{ACRONYM}/({SPACENLS})([A]bout|[A]ccording|[A]dditionally|[A]fter|[A]n|[A]|[A]s|[A]t|'
     r'[B]ut|[E]arlier|[H]e|[H]er|[H]ere|[H]owever|[I]f|[I]n|[I]t|[L]ast|[M]any|[M]ore|'
     r'[M]r\.|[M]s\.|[N]ow|[O]nce|[O]ne|[O]ther|[O]ur|[S]he|[S]ince|[S]o|[S]ome|[S]uch|'
     r'[T]hat|[T]he|[T]heir|[T]hen|[T]here|[T]hese|[T]hey|[T]his|[W]e|[W]hen|[W]hile|'
     r'[W]hat|[Y]et|[Y]ou|{SGML}){SPACENL}', 'acronym'),
    (r'{ABBREV3}/{SPACENL}?[:digit:]', 'plain'),
    (r'(pt[eyEY]|co)\./{SPACE}(ltd|lim)', 'plain'),
    (r'{ABBREV1}/{SENTEND}', 'abbrev1'),
    (r'{ABBREV1}/[^][^]', 'plain'),
    (r'{ABBREV1}', 'abbrev1'),
    (r'{ABBREV2}', 'plain'),
    (r'{ABBREV4}/{SPACE}', 'plain'),
    (r'{ACRO}/{SPACENL}', 'plain'),
    (r'{TBSPEC2}/{SPACENL}', 'plain'),
    (r'{FILENAME}/({SPACENL}|[.?!,])', 'plain'),
    (r'{WORD}\./{INSENTP}', 'softhyph'),
    (r'{PHONE}', 'phone'),
    (r'{DBLQUOT}/[A-Za-z0-9$]', 'quote_l'),
    (r'{DBLQUOT}', 'quote_r'),
    (r'\x7f', 'skip'),
    (r'{LESSTHAN}', 'lit', '<'),
    (r'{GREATERTHAN}', 'lit', '>'),
    (r'{SMILEY}/[^A-Za-z0-9]', 'parens'),
    (r'{ASIANSMILEY}', 'parens'),
    (r'\{', 'lit', '-LCB-'),
    (r'\}', 'lit', '-RCB-'),
    (r'\[', 'lit', '-LSB-'),
    (r'\]', 'lit', '-RSB-'),
    (r'\(', 'lit', '-LRB-'),
    (r'\)', 'lit', '-RRB-'),
    (r'{HYPHENS}', 'hyphens'),
    (r'{LDOTS}', 'lit', '...'),
    (r'{FNMARKS}', 'plain'),
    (r'{ASTS}', 'plain'),
    (r'{INSENTP}', 'plain'),
    (r'[?!]+', 'plain'),
    (r'[.\u00A1\u00BF\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002]', 'plain'),
    (r'=', 'plain'),
    (r'\/', 'plain'),
    (r'{HTHING}\./{INSENTP}', 'softhyph'),
    (r'{HTHING}', 'softhyph'),
    (r'{THING}\./{INSENTP}', 'plain'),
    (r'{THING}', 'plain'),
    (r'{THINGA}\./{INSENTP}', 'amp'),
    (r'{THINGA}', 'amp'),
    (r"'/[A-Za-z][^ \t\n\r\u00A0]", 'quote_l'),
    (r'{REDAUX}', 'quote_r'),
    (r'{SREDAUX}', 'quote_r'),
    (r'{QUOTES}', 'quote_r'),
    (r'{FAKEDUCKFEET}', 'plain'),
    (r'{MISCSYMBOL}', 'plain'),
    (r'\0|{SPACES}|[\u200B\u200E-\u200F\uFEFF]', 'skip'),
    (r'{NEWLINE}', 'skip'),  # *NL* under tokenizeNLs: the caption's end (see above)
    (r'&nbsp;', 'skip'),
    (r'.', 'skip'),  # untokenizable: deleted (untokenizable=firstDelete)
]


def _ranges_where(pred):
    """[(lo, hi)] of the BMP code units (surrogates excluded) where pred holds."""
    out, start = [], None
    for c in range(0x10000):
        ok = not (0xD800 <= c <= 0xDFFF) and pred(chr(c))
        if ok and start is None:
            start = c
        elif not ok and start is not None:
            out.append((start, c - 1))
            start = None
    if start is not None:
        out.append((start, 0xFFFF))
    return out


# JFlex's predefined classes: Character.isLetter, isDigit, isUpperCase (on UTF-16 units).
PREDEFINED = {
    'letter': _ranges_where(lambda ch: unicodedata.category(ch) in ('Lu', 'Ll', 'Lt', 'Lm', 'Lo')),
    'digit': _ranges_where(lambda ch: unicodedata.category(ch) == 'Nd'),
    'uppercase': _ranges_where(lambda ch: unicodedata.category(ch) == 'Lu'),
}

_SIMPLE_ESCAPES = {'t': 0x09, 'n': 0x0A, 'r': 0x0D, 'f': 0x0C, 'b': 0x08}


def _unit(c):
    return '\\u%04x' % c


class _JFlexToPython:
    """Translates the JFlex regular expressions above into Python ones."""

    def __init__(self, text):
        self.s, self.i = text, 0

    def peek(self):
        return self.s[self.i] if self.i < len(self.s) else None

    def escape(self):
        # at a backslash: the code unit it stands for
        self.i += 1
        c = self.s[self.i]
        if c == 'u':
            v = int(self.s[self.i + 1:self.i + 5], 16)
            self.i += 5
            return v
        if c == 'x':
            v = int(self.s[self.i + 1:self.i + 3], 16)
            self.i += 3
            return v
        if c in '01234567':  # octal (only \0 occurs)
            j = self.i
            while j < len(self.s) and j < self.i + 3 and self.s[j] in '01234567':
                j += 1
            v = int(self.s[self.i:j], 8)
            self.i = j
            return v
        self.i += 1
        return _SIMPLE_ESCAPES.get(c, ord(c))

    def predefined(self):
        for name in PREDEFINED:
            tag = '[:%s:]' % name
            if self.s.startswith(tag, self.i):
                self.i += len(tag)
                return PREDEFINED[name]
        return None

    def char_class(self):
        pre = self.predefined()
        if pre is not None:
            return '[' + ''.join(_unit(a) + '-' + _unit(b) for a, b in pre) + ']'
        self.i += 1  # '['
        neg = self.peek() == '^'
        if neg:
            self.i += 1
        ranges = []
        while self.peek() != ']':
            pre = self.predefined()
            if pre is not None:
                ranges += pre
                continue
            lo = self.item()
            hi = lo
            if self.peek() == '-' and self.s[self.i + 1] != ']':
                self.i += 1
                hi = self.item()
            ranges.append((lo, hi))
        self.i += 1  # ']'
        if not ranges:
            return '[\\x00-\\uffff]' if neg else '(?!)'
        return '[' + ('^' if neg else '') + ''.join(_unit(a) + '-' + _unit(b) for a, b in ranges) + ']'

    def item(self):
        if self.peek() == '\\':
            return self.escape()
        c = ord(self.s[self.i])
        self.i += 1
        return c

    def regex(self):
        out = [self.branch()]
        while self.peek() == '|':
            self.i += 1
            out.append(self.branch())
        return '|'.join(out)

    def branch(self):
        out = ''
        while self.peek() is not None and self.peek() not in '|)':
            out += self.piece()
        return out

    def piece(self):
        atom = self.atom()
        while True:
            c = self.peek()
            if c in ('*', '+', '?'):
                self.i += 1
                atom = '(?:%s)%s' % (atom, c)
            elif c == '{' and self.s[self.i + 1].isdigit():
                j = self.s.index('}', self.i)
                atom = '(?:%s)%s' % (atom, self.s[self.i:j + 1])
                self.i = j + 1
            else:
                return atom

    def atom(self):
        c = self.peek()
        if c == '(':
            self.i += 1
            inner = self.regex()
            assert self.peek() == ')', self.s
            self.i += 1
            return '(?:%s)' % inner
        if c == '[':
            return self.char_class()
        if c == '{':
            j = self.s.index('}', self.i)
            name = self.s[self.i + 1:j]
            self.i = j + 1
            return '(?:%s)' % translate(MACROS[name])
        if c == '.':
            self.i += 1
            return '[^\\n]'
        v = self.item()
        ch = chr(v)
        if ch.isascii() and ch.isalpha():  # %caseless: literals outside classes
            return '[%s%s]' % (ch.lower(), ch.upper())
        return _unit(v)


def translate(text):
    p = _JFlexToPython(text)
    out = p.regex()
    assert p.i == len(text), 'unparsed: %r' % text[p.i:]
    return out


def split_trailing(text):
    """r1/r2 at the unescaped top-level slash (None for r2 without one)."""
    i, depth, in_class = 0, 0, False
    while i < len(text):
        c = text[i]
        if c == '\\':
            i += 2
            continue
        if in_class:
            if c == ']':
                in_class = False
        elif text.startswith('[:', i):
            i = text.index(':]', i) + 2
            continue
        elif c == '[':
            in_class = True
            if text.startswith('[^]', i):
                i += 3
                in_class = False
                continue
        elif c == '(':
            depth += 1
        elif c == ')':
            depth -= 1
        elif c == '/' and depth == 0:
            return text[:i], text[i + 1:]
        i += 1
    return text, None


_COMPILED = None


def compiled_rules():
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = []
        for rule in RULES:
            r1, r2 = split_trailing(rule[0])
            _COMPILED.append((re.compile(translate(r1)),
                              re.compile(translate(r2)) if r2 is not None else None,
                              rule[1], rule[2] if len(rule) > 2 else None))
    return _COMPILED


def _ends(rx, s, pos):
    """Every end e > pos with s[pos:e] in the language of rx, longest first."""
    if rx.match(s, pos) is None:
        return []
    return [e for e in range(len(s), pos, -1) if rx.fullmatch(s, pos, e)]


_LEFT_SINGLE = '\u0091\u2018\u201B\u2039'
_RIGHT_SINGLE = '\u0092\u2019\u203A'
_LEFT_DOUBLE = '\u0093\u201C\u00AB'
_RIGHT_DOUBLE = '\u0094\u201D\u00BB'


def latex_quotes(s, probably_left):
    """PTBLexer.latexQuotes."""
    if probably_left:
        s = re.sub("&apos;|'", '`', s)
        s = re.sub('"|&quot;', '``', s)
    else:
        s = re.sub("&apos;|'", "'", s)
        s = re.sub('"|&quot;', "''", s)
    s = re.sub('[' + _LEFT_SINGLE + ']', '`', s)
    s = re.sub('[' + _RIGHT_SINGLE + ']', "'", s)
    s = re.sub('[' + _LEFT_DOUBLE + ']', '``', s)
    s = re.sub('[' + _RIGHT_DOUBLE + ']', "''", s)
    return s


def remove_soft_hyphens(s):
    out = s.replace('\u00AD', '')
    return out if out else '-'


def normalize_amp(s):
    return re.sub('(?i:&amp;)', '&', s)


def apply_action(kind, arg, text):
    """(token or None, code units of text to scan again) for a matched rule."""
    if kind == 'plain':
        return text, 0
    if kind == 'softhyph':
        return remove_soft_hyphens(text), 0
    if kind == 'pushback':
        return text[:len(text) - arg], arg
    if kind == 'nbsp':
        return text.replace(' ', '\u00A0'), 0
    if kind == 'amp':
        return normalize_amp(text), 0
    if kind == 'quote_l':
        return latex_quotes(text, True), 0
    if kind == 'quote_r':
        return latex_quotes(text, False), 0
    if kind == 'lit':
        return arg, 0
    if kind == 'skip':
        return None, 0
    if kind == 'fraction':
        for a, b in (('\u00BC', '1/4'), ('\u00BD', '1/2'), ('\u00BE', '3/4'),
                     ('\u2153', '1/3'), ('\u2154', '2/3')):
            text = text.replace(a, b)
        return text, 0
    if kind == 'currency':
        text = text.replace('\u00A2', 'cents').replace('\u00A3', '#')
        return re.sub('[\u0080\u00A4\u20A0\u20AC]', '$', text), 0
    if kind == 'phone':
        text = text.replace(' ', '\u00A0')
        return text.replace('(', '-LRB-').replace(')', '-RRB-'), 0
    if kind == 'parens':
        return text.replace('(', '-LRB-').replace(')', '-RRB-'), 0
    if kind == 'hyphens':
        return ('--' if 3 <= len(text) <= 4 else text), 0
    if kind == 'acronym':
        if len(text) == 2:
            return text[:1], 1
        return text, 1
    if kind == 'abbrev1':
        return text, 1
    raise ValueError(kind)


def to_units(s):
    """A str as Java's UTF-16 code units (each unit one character of the result)."""
    b = s.encode('utf-16-le', 'surrogatepass')
    return ''.join(chr(b[i] | b[i + 1] << 8) for i in range(0, len(b), 2))


def from_units(u):
    """Back to a str; an unpaired surrogate becomes '?' as Java's UTF-8 encoder writes it."""
    out, i = [], 0
    while i < len(u):
        c = ord(u[i])
        if 0xD800 <= c < 0xDC00 and i + 1 < len(u) and 0xDC00 <= ord(u[i + 1]) < 0xE000:
            out.append(chr(0x10000 + ((c - 0xD800) << 10) + (ord(u[i + 1]) - 0xDC00)))
            i += 2
        elif 0xD800 <= c < 0xE000:
            out.append('?')
            i += 1
        else:
            out.append(u[i])
            i += 1
    return ''.join(out)


def ptb_lex(text, eof_after=False):
    """PTBLexer's tokens of text (before -lowerCase). The caption is followed by a newline
    as in coco's joined input unless eof_after (then it ends the input, as in CoreNLP's
    own tests)."""
    s = to_units(text) + ('' if eof_after else '\n')
    rules = compiled_rules()
    pos, tokens = 0, []
    while pos < len(s):
        best = None  # (total end, r1 end, rule)
        for rx1, rx2, kind, arg in rules:
            ends1 = _ends(rx1, s, pos)
            if not ends1:
                continue
            if rx2 is None:
                cand = (ends1[0], ends1[0])
            else:
                cand = None
                for e1 in ends1:  # longest r1 first: a tie in total keeps it
                    ends2 = _ends(rx2, s, e1)
                    if ends2 and (cand is None or ends2[0] > cand[0]):
                        cand = (ends2[0], e1)
                if cand is None:
                    continue
            if best is None or cand[0] > best[0]:
                best = (cand[0], cand[1], kind, arg)
        _, e1, kind, arg = best
        token, back = apply_action(kind, arg, s[pos:e1])
        if token is not None:
            tokens.append(from_units(token))
        pos = e1 - back
    return tokens


PUNCTUATIONS = ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                ".", "?", "!", ",", ":", "-", "--", "...", ";"]


def coco_tokens(caption):
    """The tokens coco-caption's PTBTokenizer.tokenize gives one caption, as CiderScorer's
    precook then splits them (Python 2 str.split(): ASCII whitespace)."""
    caption = caption.replace('\n', ' ')
    words = [w.lower() for w in ptb_lex(caption)]
    line = ' '.join(w for w in words if w not in PUNCTUATIONS)
    return [w for w in re.split('[ \t\n\r\x0b\x0c]+', line) if w]


# ---- 2. CiderScorer (coco-caption pycocoevalcap/cider/cider_scorer.py) ---------------

def precook(words, n=4):
    counts = defaultdict(int)
    for k in range(1, n + 1):
        for i in range(len(words) - k + 1):
            ngram = tuple(words[i:i + k])
            counts[ngram] += 1
    return counts


class CiderScorer(object):
    def __init__(self, n=4, sigma=6.0):
        self.n = n
        self.sigma = sigma
        self.crefs = []
        self.ctest = []
        self.document_frequency = defaultdict(float)
        self.ref_len = None

    def add(self, test_words, refs_words):
        self.crefs.append([precook(r, self.n) for r in refs_words])
        self.ctest.append(precook(test_words, self.n))

    def compute_doc_freq(self):
        for refs in self.crefs:
            for ngram in set([ngram for ref in refs for (ngram, count) in ref.items()]):
                self.document_frequency[ngram] += 1

    def compute_cider(self):
        def counts2vec(cnts):
            vec = [defaultdict(float) for _ in range(self.n)]
            length = 0
            norm = [0.0 for _ in range(self.n)]
            for (ngram, term_freq) in cnts.items():
                df = math.log(max(1.0, self.document_frequency[ngram]))
                n = len(ngram) - 1
                vec[n][ngram] = float(term_freq) * (self.ref_len - df)
                norm[n] += pow(vec[n][ngram], 2)
                if n == 1:
                    length += term_freq
            norm = [math.sqrt(n) for n in norm]
            return vec, norm, length

        def sim(vec_hyp, vec_ref, norm_hyp, norm_ref, length_hyp, length_ref):
            delta = float(length_hyp - length_ref)
            val = [0.0 for _ in range(self.n)]
            for n in range(self.n):
                for (ngram, count) in vec_hyp[n].items():
                    val[n] += min(vec_hyp[n][ngram], vec_ref[n][ngram]) * vec_ref[n][ngram]
                if (norm_hyp[n] != 0) and (norm_ref[n] != 0):
                    val[n] /= (norm_hyp[n] * norm_ref[n])
                assert not math.isnan(val[n])
                val[n] *= math.e ** (-(delta ** 2) / (2 * self.sigma ** 2))
            return val

        self.ref_len = math.log(float(len(self.crefs)))
        scores = []
        for test, refs in zip(self.ctest, self.crefs):
            vec, norm, length = counts2vec(test)
            score = [0.0 for _ in range(self.n)]
            for ref in refs:
                vec_ref, norm_ref, length_ref = counts2vec(ref)
                v = sim(vec, vec_ref, norm, norm_ref, length, length_ref)
                score = [a + b for a, b in zip(score, v)]
            score_avg = sum(score) / len(score)  # np.mean of 4 values: in order, / 4
            score_avg /= len(refs)
            score_avg *= 10.0
            scores.append(score_avg)
        return scores

    def compute_score(self):
        self.compute_doc_freq()
        assert len(self.ctest) >= max(self.document_frequency.values())
        score = self.compute_cider()
        return sum(score) / len(score), score


def cider(hyps, refsets, sigma=6.0, tokenize=True):
    """Corpus CIDEr-D (coco's scale: x 10 already, not x 100) and per-image scores.
    refsets[i]: the references of image i (None entries are absent)."""
    scorer = CiderScorer(sigma=sigma)
    for hyp, refs in zip(hyps, refsets):
        present = [r for r in refs if r is not None]
        if tokenize:
            scorer.add(coco_tokens(hyp), [coco_tokens(r) for r in present])
        else:
            scorer.add(hyp.split(), [r.split() for r in present])
    return scorer.compute_score()


# ---- self-test: PTBTokenizerTest.java of CoreNLP v3.4.1 ---------------------------------

SELFTEST = [
    ("This is a sentence.", ["This", "is", "a", "sentence", "."]),
    ("Based in Eugene,Ore., PakTech needs a new distributor after Sydney-based Creative Pack "
     "Pty. Ltd. went into voluntary administration.",
     ["Based", "in", "Eugene", ",", "Ore.", ",", "PakTech", "needs", "a", "new", "distributor",
      "after", "Sydney-based", "Creative", "Pack", "Pty.", "Ltd.", "went", "into", "voluntary",
      "administration", "."]),
    ("The Iron Age (ca. 1300 \u2013 ca. 300 BC).",
     ["The", "Iron", "Age", "-LRB-", "ca.", "1300", "--", "ca.", "300", "BC", "-RRB-", "."]),
    ("Indo\u00ADnesian ship\u00ADping \u00AD", ["Indonesian", "shipping", "-"]),
    ("Gimme a phone, I'm gonna call.",
     ["Gim", "me", "a", "phone", ",", "I", "'m", "gon", "na", "call", "."]),
    ("\"John & Mary's dog,\" Jane thought (to herself).\n\"What a #$%!\na- ``I like AT&T''.\"",
     ["``", "John", "&", "Mary", "'s", "dog", ",", "''", "Jane", "thought", "-LRB-", "to",
      "herself", "-RRB-", ".", "``", "What", "a", "#", "$", "%", "!", "a", "-", "``", "I",
      "like", "AT&T", "''", ".", "''"]),
    ("I said at 4:45pm.", ["I", "said", "at", "4:45", "pm", "."]),
    ("I can't believe they wanna keep 40% of that.\"\n``Whatcha think?''\n\"I don't --- think so...,\"",
     ["I", "ca", "n't", "believe", "they", "wan", "na", "keep", "40", "%", "of", "that", ".",
      "''", "``", "Whatcha", "think", "?", "''", "``", "I", "do", "n't", "--", "think", "so",
      "...", ",", "''"]),
    ("You `paid' US$170,000?!\nYou should've paid only$16.75.",
     ["You", "`", "paid", "'", "US$", "170,000", "?!", "You", "should", "'ve", "paid", "only",
      "$", "16.75", "."]),
    ("1. Buy a new Chevrolet (37%-owned in the U.S..) . 15%",
     ["1", ".", "Buy", "a", "new", "Chevrolet", "-LRB-", "37", "%", "-", "owned", "in", "the",
      "U.S.", ".", "-RRB-", ".", "15", "%"]),
    ("I like you ;-) but do you care :(. I'm happy ^_^ but shy (x.x)!",
     ["I", "like", "you", ";--RRB-", "but", "do", "you", "care", ":-LRB-", ".", "I", "'m",
      "happy", "^_^", "but", "shy", "-LRB-x.x-RRB-", "!"]),
    ("Diamond (``Not even the chair'') lives near Udaipur (84km). {1. A potential Palmer trade:}",
     ["Diamond", "-LRB-", "``", "Not", "even", "the", "chair", "''", "-RRB-", "lives", "near",
      "Udaipur", "-LRB-", "84km", "-RRB-", ".", "-LCB-", "1", ".", "A", "potential", "Palmer",
      "trade", ":", "-RCB-"]),
    ("No. I like No. 24 and no.47.",
     ["No", ".", "I", "like", "No.", "24", "and", "no.", "47", "."]),
    ("You can get a B.S. or a B. A. or a Ph.D (sometimes a Ph. D) from Stanford.",
     ["You", "can", "get", "a", "B.S.", "or", "a", "B.", "A.", "or", "a", "Ph.D", "-LRB-",
      "sometimes", "a", "Ph.", "D", "-RRB-", "from", "Stanford", "."]),
    ("@Harry_Styles didn`t like Mu`ammar al-Qaddafi",
     ["@Harry_Styles", "did", "n`t", "like", "Mu`ammar", "al-Qaddafi"]),
    ("Kenneth liked Windows 3.1, Windows 3.x, and Mesa A.B as I remember things.",
     ["Kenneth", "liked", "Windows", "3.1", ",", "Windows", "3.x", ",", "and", "Mesa", "A.B",
      "as", "I", "remember", "things", "."]),
    ("So, too, many analysts predict, will Exxon Corp., Chevron Corp. and Amoco Corp.   ",
     ["So", ",", "too", ",", "many", "analysts", "predict", ",", "will", "Exxon", "Corp.", ",",
      "Chevron", "Corp.", "and", "Amoco", "Corp.", "."]),
    ("it's", ["it", "'s"]),
    (" it's ", ["it", "'s"]),
    ("Significant improvements in peak FEV1 were demonstrated with tiotropium/olodaterol 5/2 "
     "\u03bcg (p = 0.008), 5/5 \u03bcg (p = 0.012), and 5/10 \u03bcg (p < 0.0001) versus "
     "tiotropium monotherapy [51].",
     ["Significant", "improvements", "in", "peak", "FEV1", "were", "demonstrated", "with",
      "tiotropium/olodaterol", "5/2", "\u03bcg", "-LRB-", "p", "=", "0.008", "-RRB-", ",", "5/5",
      "\u03bcg", "-LRB-", "p", "=", "0.012", "-RRB-", ",", "and", "5/10", "\u03bcg", "-LRB-", "p",
      "<", "0.0001", "-RRB-", "versus", "tiotropium", "monotherapy", "-LSB-", "51", "-RSB-",
      "."]),
    ("Panasonic brand products are produced by Samsung Electronics Co. Ltd. Sanyo products "
     "aren't.",
     ["Panasonic", "brand", "products", "are", "produced", "by", "Samsung", "Electronics",
      "Co.", "Ltd.", ".", "Sanyo", "products", "are", "n't", "."]),
    ("Oesophageal acid exposure (% time <pH 4) was similar in patients with or without "
     "complications (19.2% v 19.3% p>0.05).",
     ["Oesophageal", "acid", "exposure", "-LRB-", "%", "time", "<", "pH", "4", "-RRB-", "was",
      "similar", "in", "patients", "with", "or", "without", "complications", "-LRB-", "19.2",
      "%", "v", "19.3", "%", "p", ">", "0.05", "-RRB-", "."]),
    ("<!DOCTYPE html PUBLIC \"-//W3C//DTD HTML 4.01 Strict//EN\" "
     "\"http://www.w3.org/TR/html4/strict.dtd\">",
     ["<!DOCTYPE\u00A0html\u00A0PUBLIC\u00A0\"-//W3C//DTD\u00A0HTML\u00A04.01\u00A0Strict//EN\""
      "\u00A0\"http://www.w3.org/TR/html4/strict.dtd\">"]),
    ("Hi! <foo bar=\"baz xy = foo !$*) 422\" > <?PITarget PIContent?> <?PITarget PIContent> Hi!",
     ["Hi", "!", "<foo\u00A0bar=\"baz\u00A0xy\u00A0=\u00A0foo\u00A0!$*)\u00A0422\"\u00A0>",
      "<?PITarget\u00A0PIContent?>", "<?PITarget\u00A0PIContent>", "Hi", "!"]),
    ("&lt;b...@canada.com&gt; funky@thedismalscience.net <myemail@where.com>",
     ["&lt;b...@canada.com&gt;", "funky@thedismalscience.net", "<myemail@where.com>"]),
    ("Enter an option [?/Current]:{1}",
     ["Enter", "an", "option", "-LSB-", "?", "/", "Current", "-RSB-", ":", "-LCB-", "1", "-RCB-"]),
    ("for example, {1}http://www.autodesk.com{2}, or a path",
     ["for", "example", ",", "-LCB-", "1", "-RCB-", "http://www.autodesk.com", "-LCB-", "2",
      "-RCB-", ",", "or", "a", "path"]),
    ("enter {3}@{4} at the Of prompt.",
     ["enter", "-LCB-", "3", "-RCB-", "@", "-LCB-", "4", "-RCB-", "at", "the", "Of", "prompt",
      "."]),
    ("{1}block name={2}", ["-LCB-", "1", "-RCB-", "block", "name", "=", "-LCB-", "2", "-RCB-"]),
]


def selftest():
    bad = 0
    for text, gold in SELFTEST:
        got = ptb_lex(text, eof_after=True)
        if got != gold:
            bad += 1
            print('MISMATCH %r\n  gold %r\n  got  %r' % (text, gold, got))
    print('%d of %d CoreNLP 3.4.1 test sentences tokenized as the gold' %
          (len(SELFTEST) - bad, len(SELFTEST)))
    return 1 if bad else 0


def read_lines(path):
    with open(path, encoding='utf-8', newline='\n') as f:
        text = f.read()
    lines = text.split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    # intrus eval reads lines with Python's rstrip()
    return [l.rstrip() for l in lines]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ref', action='append', default=[])
    ap.add_argument('--hyp')
    ap.add_argument('--sigma', type=float, default=6.0)
    ap.add_argument('--images', action='store_true', help='print every image score too')
    ap.add_argument('--tokenize', metavar='FILE')
    ap.add_argument('--raw', action='store_true', help='with --tokenize: PTBLexer tokens, '
                    'before lowercasing and the punctuation filter, joined by " | "')
    ap.add_argument('--selftest', action='store_true')
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    if a.tokenize:
        for line in read_lines(a.tokenize):
            print(' | '.join(ptb_lex(line)) if a.raw else ' '.join(coco_tokens(line)))
        return 0
    if not a.hyp or not a.ref:
        ap.error('--hyp and at least one --ref are needed')
    hyps = read_lines(a.hyp)
    refs = [read_lines(r) for r in a.ref]
    for r, path in zip(refs, a.ref):
        if len(r) != len(hyps):
            ap.error('%s has %d lines, %s has %d' % (path, len(r), a.hyp, len(hyps)))
    refsets = [[r[i] if r[i] != '' else None for r in refs] for i in range(len(hyps))]
    score, scores = cider(hyps, refsets, sigma=a.sigma)
    print('CIDEr-D = %.12f (%d images)' % (100.0 * score, len(hyps)))
    if a.images:
        for i, s in enumerate(scores):
            print('image %d: %.17g' % (i + 1, 100.0 * s))
    return 0


if __name__ == '__main__':
    sys.exit(main())
