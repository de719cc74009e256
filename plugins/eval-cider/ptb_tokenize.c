/* coco-caption's tokenisation in C: CoreNLP 3.4.1's PTBLexer, then -lowerCase and the
 * PUNCTUATIONS filter of pycocoevalcap/tokenizer/ptbtokenizer.py.
 *
 * What is reproduced. coco-caption runs
 *     java edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase FILE
 * (stanford-corenlp-3.4.1.jar) over all captions joined by newlines, splits each output
 * line at spaces, drops the tokens in
 *     PUNCTUATIONS = '' ' `` ` -LRB- -RRB- -LCB- -RCB- . ? ! , : - -- ... ;
 * and CiderScorer's precook splits the rejoined line again (Python 2 str.split()). Here:
 *   - the lexer: the macro definitions and rules below are PTBLexer.flex of CoreNLP
 *     v3.4.1 (src/edu/stanford/nlp/process/PTBLexer.flex) copied verbatim, non-ASCII
 *     characters written \uXXXX, compiled at run time by a small regular-expression
 *     engine (Thompson NFA, set simulation) with JFlex's semantics: at every position the
 *     rule with the longest match wins, ties going to the earlier rule; a trailing context
 *     r1/r2 counts in the length but only r1 is consumed; %caseless lets literal letters
 *     outside character classes match either case; [:letter:], [:digit:] and
 *     [:uppercase:] are Java's Character.isLetter / isDigit / isUpperCase; the input is
 *     matched as UTF-16 code units, as the Java scanner sees it (a character outside the
 *     BMP is two surrogates, which no letter class contains: it is deleted as
 *     untokenizable, as in Java, unless a negated class such as a URL's takes it);
 *   - the actions, with PTBLexer's default options (ptb3Escaping: -LRB- -RRB- -LCB- -RCB-
 *     -LSB- -RSB-, latexQuotes `` '' ` ', ptb3Ellipsis "...", ptb3Dashes "--",
 *     normalizeSpace, normalizeAmpersandEntity, normalizeCurrency, normalizeFractions,
 *     splitAssimilations (gonna -> gon na, cannot -> can not), soft hyphens removed,
 *     americanize OFF, escapeForwardSlashAsterisk off, traditional (not strict) treebank
 *     3, untokenizable characters deleted) plus tokenizeNLs, which -preserveLines sets;
 *   - -lowerCase: String.toLowerCase(Locale.ENGLISH) of every token AFTER normalisation.
 *     So "(" becomes "-LRB-" and then "-lrb-", which coco's upper-case PUNCTUATIONS does
 *     not contain: brackets, braces and parentheses stay in the scored text as -lrb-,
 *     -rrb-, -lsb-, -rsb-, -lcb-, -rcb- (this is what coco-caption really does);
 *   - the filter and the final split at ASCII whitespace (a normalised U+00A0 inside a
 *     token, as in the fraction "2 1/2" -> "2\u00A01/2", keeps it one token).
 * Contractions thus split as PTB does (can't -> ca n't, don't -> do n't, it's -> it 's,
 * we'll -> we 'll), quotes become `` '' ` ' and are dropped, "..." and "--" are dropped,
 * hyphenated words stay whole (well-known), numbers keep their . , : (3.5, 1,000, 4:45),
 * and abbreviations keep their period (mr., st., etc., u.s.).
 *
 * Where it can differ from Java, each time rarely in captions:
 *   - context past the caption's end: each caption is scanned on its own, followed by a
 *     newline and nothing else. In coco the next caption follows, and two rules look
 *     past a newline: a one-letter or dotted acronym ending a caption ("... letter b.")
 *     is split "b" "." by Java when the next caption starts with one of the capitalised
 *     words of the ACRONYM rule (A, The, He, It, This, ...), kept "b." here; and "no." /
 *     "ca." / "fig." ending a caption stays whole in Java when the next starts with a
 *     digit, splits here. The last caption of coco's input is followed by the end of
 *     the input instead, which changes a final smiley (":)" -> ":" "-RRB-") or "'90".
 *     Captions containing the other line separators Java knows (\r, U+000B, U+000C,
 *     U+2028, U+2029) shift coco's line alignment; here they are plain separators;
 *   - Unicode tables: letters, digits and upper case come from utf8proc's Unicode
 *     version, JFlex's from the JDK that built CoreNLP (Unicode 6 or older); lowercasing
 *     is utf8proc's simple mapping plus U+0130 -> i U+0307 and the final sigma, as
 *     Java's; Java decides the final sigma with word boundaries, here with Unicode's
 *     Final_Sigma context (case-ignorable / cased letters) as Python does;
 *   - JFlex 1.4's handling of a trailing context whose split is ambiguous is not
 *     reproduced: here the longest r1 wins. No rule of PTBLexer.flex is ambiguous in
 *     that way for text without newlines, so this should never show;
 *   - Python 3 ports of coco-caption (pycocoevalcap on PyPI) split with str.split(),
 *     which also splits at U+00A0: "2 1/2" is one token here and in coco-caption, two
 *     there. coco-caption itself (Python 2) writes the joined captions to a byte file
 *     without encoding them, which (by our reading) raises UnicodeEncodeError for
 *     non-ASCII captions; the Python 3 ports write UTF-8, as this file assumes.
 * scripts/reference/cider_reference.py implements the same tokenizer independently with
 * Python's re module (its tables are the source of the ones below) and checks it against
 * the gold of CoreNLP 3.4.1's PTBTokenizerTest; tests/test_cider runs the same gold here. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "ptb_tokenize.h"
#include "../common/unicode_case.h"

/* ---- the lexer specification (PTBLexer.flex, CoreNLP v3.4.1) ------------------------ */

struct ptb_macro {
  const char *name, *re;
};

/* What a rule does with its match (the actions of PTBLexer.flex): */
enum ptb_action {
  ACT_PLAIN,       /* the text */
  ACT_SOFTHYPH,    /* the text without soft hyphens U+00AD ("-" if nothing is left) */
  ACT_PUSHBACK,    /* the text less its last n units, which are scanned again */
  ACT_NBSP,        /* spaces become U+00A0 (normalizeSpace) */
  ACT_AMP,         /* "&amp;" in any case becomes "&" */
  ACT_QUOTE_LEFT,  /* latexQuotes(text, probablyLeft = true) */
  ACT_QUOTE_RIGHT, /* latexQuotes(text, false) */
  ACT_LITERAL,     /* the fixed text lit */
  ACT_SKIP,        /* no token */
  ACT_FRACTION,    /* normalizeFractions: U+00BC -> 1/4, ... */
  ACT_CURRENCY,    /* normalizeCurrency: cent -> cents, pound -> #, euro etc. -> $ */
  ACT_PHONE,       /* spaces -> U+00A0, ( ) -> -LRB- -RRB- */
  ACT_PARENS,      /* ( ) -> -LRB- -RRB- (smileys) */
  ACT_HYPHENS,     /* 3 or 4 hyphens -> "--" */
  ACT_ACRONYM,     /* 2 units: the letter (the period is scanned again); else the text,
                    * and its period again */
  ACT_ABBREV1      /* the text, and its final period scanned again */
};

struct ptb_rule {
  const char *re; /* "r1" or "r1/r2" (trailing context) */
  enum ptb_action act;
  int n;
  const char *lit;
};

/* Generated from the tables of scripts/reference/cider_reference.py, which holds them as
 * copied from PTBLexer.flex. FRACSTB3 (the strict-treebank-3 fraction, whose rule is
 * inactive in the traditional state) is left out. */
static const struct ptb_macro ptb_macros[] = {
    {"SGML", "\\<([!\\?][A-Za-z\\-][^>\\r\\n]*|[A-Za-z][A-Za-z0-9_:\\.\\-]*([ ]+([A-Za-z][A-Za-"
        "z0-9_:\\.\\-]*|[A-Za-z][A-Za-z0-9_:\\.\\-]*[ ]*=[ ]*('[^']*'|"
        "\\\"[^\\\"]*\\\")))*[ ]*\\/?|\\/[A-Za-z][A-Za-z0-9_:\\.\\-]*)[ ]*\\>"},
    {"SPMDASH", "&(MD|mdash|ndash);|[\\u0096\\u0097\\u2013\\u2014\\u2015]"},
    {"SPAMP", "&amp;"},
    {"SPPUNC", "&(HT|TL|UR|LR|QC|QL|QR|odq|cdq|#[0-9]+);"},
    {"SPLET", "&[aeiouAEIOU](acute|grave|uml);"},
    {"SPACE", "[ \\t\\u00A0\\u2000-\\u200A\\u3000]"},
    {"SPACES", "{SPACE}+"},
    {"NEWLINE", "\\r|\\r?\\n|\\u2028|\\u2029|\\u000B|\\u000C|\\u0085"},
    {"SPACENL", "({SPACE}|{NEWLINE})"},
    {"SPACENLS", "{SPACENL}+"},
    {"SENTEND", "{SPACENL}({SPACENL}|[:uppercase:]|{SGML})"},
    {"DIGIT", "[:digit:]|[\\u07C0-\\u07C9]"},
    {"DATE", "{DIGIT}{1,2}[\\-\\/]{DIGIT}{1,2}[\\-\\/]{DIGIT}{2,4}"},
    {"NUM", "{DIGIT}+|{DIGIT}*([.:,\\u00AD\\u066B\\u066C]{DIGIT}+)+"},
    {"NUMBER", "[\\-+]?{NUM}"},
    {"SUBSUPNUM", "[\\u207A\\u207B\\u208A\\u208B]?([\\u2070\\u00B9\\u00B2\\u00B3\\u2074-\\u2079"
        "]+|[\\u2080-\\u2089]+)"},
    {"FRAC", "({DIGIT}{1,4}[- \\u00A0])?{DIGIT}{1,4}(\\\\?\\/|\\u2044){DIGIT}{1,4}"},
    {"FRAC2", "[\\u00BC\\u00BD\\u00BE\\u2153-\\u215E]"},
    {"DOLSIGN", "([A-Z]*\\$|#)"},
    {"DOLSIGN2", "[\\u00A2\\u00A3\\u00A4\\u00A5\\u0080\\u20A0\\u20AC\\u060B\\u0E3F\\u20A4\\uFFE"
        "0\\uFFE1\\uFFE5\\uFFE6]"},
    {"LETTER", "([:letter:]|{SPLET}|[\\u00AD\\u0237-\\u024F\\u02C2-\\u02C5\\u02D2-\\u02DF\\u02E"
        "5-\\u02FF\\u0300-\\u036F\\u0370-\\u037D\\u0384\\u0385\\u03CF\\u03F6\\u03FC-\\u03FF\\"
        "u0483-\\u0487\\u04CF\\u04F6-\\u04FF\\u0510-\\u0525\\u055A-\\u055F\\u0591-\\u05BD\\u0"
        "5BF\\u05C1\\u05C2\\u05C4\\u05C5\\u05C7\\u0615-\\u061A\\u063B-\\u063F\\u064B-\\u065E"
        "\\u0670\\u06D6-\\u06EF\\u06FA-\\u06FF\\u070F\\u0711\\u0730-\\u074F\\u0750-\\u077F\\u"
        "07A6-\\u07B1\\u07CA-\\u07F5\\u07FA\\u0900-\\u0903\\u093C\\u093E-\\u094E\\u0951-\\u09"
        "55\\u0962-\\u0963\\u0981-\\u0983\\u09BC-\\u09C4\\u09C7\\u09C8\\u09CB-\\u09CD\\u09D7"
        "\\u09E2\\u09E3\\u0A01-\\u0A03\\u0A3C\\u0A3E-\\u0A4F\\u0A81-\\u0A83\\u0ABC-\\u0ACF\\u"
        "0B82\\u0BBE-\\u0BC2\\u0BC6-\\u0BC8\\u0BCA-\\u0BCD\\u0C01-\\u0C03\\u0C3E-\\u0C56\\u0D"
        "3E-\\u0D44\\u0D46-\\u0D48\\u0E30-\\u0E3A\\u0E47-\\u0E4E\\u0EB1-\\u0EBC\\u0EC8-\\u0EC"
        "D])"},
    {"WORD", "{LETTER}({LETTER}|{DIGIT})*([.!?]{LETTER}({LETTER}|{DIGIT})*)*"},
    {"FILENAME_EXT", "bat|bmp|c|class|cgi|cpp|dll|doc|docx|exe|gif|gz|h|htm|html|jar|java|jpeg|"
        "jpg|mov|mp3|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|x|xml|zip"},
    {"FILENAME", "({LETTER}|{DIGIT})+([.]({LETTER}|{DIGIT})+)*([.]{FILENAME_EXT})"},
    {"THING", "([dDoOlL]{APOSETCETERA}([:letter:]|[:digit:]))?([:letter:]|"
        "[:digit:])+({HYPHEN}([dDoOlL]{APOSETCETERA}([:letter:]|[:digit:]))?([:letter:]|"
        "[:digit:])+)*"},
    {"THINGA", "[A-Z]+(([+&]|{SPAMP})[A-Z]+)+"},
    {"THING3", "[A-Za-z0-9]+(-[A-Za-z]+){0,2}(\\\\?\\/[A-Za-z0-9]+(-[A-Za-z]+){0,2}){1,2}"},
    {"APOS", "['\\u0092\\u2019]|&apos;"},
    {"APOSETCETERA", "{APOS}|[`\\u0091\\u2018\\u201B]"},
    {"HTHING", "[A-Za-z0-9][A-Za-z0-9.,\\u00AD]*(-([A-Za-z0-9\\u00AD]+|{ACRO2}\\.))+"},
    {"REDAUX", "{APOS}([msdMSD]|re|ve|ll)"},
    {"SWORD", "[A-Za-z\\u00AD]*[A-MO-Za-mo-z](\\u00AD)*"},
    {"SREDAUX", "n{APOSETCETERA}t"},
    {"APOWORD", "{APOS}n{APOS}?|[lLdDjJ]{APOS}|Dunkin{APOS}|somethin{APOS}|ol{APOS}|{APOS}em|"
        "[A-HJ-XZn]{APOSETCETERA}[:letter:]{2}[:letter:]*|{APOS}[2-9]0s|{APOS}till?|"
        "[:letter:][:letter:]*[aeiouyAEIOUY]{APOSETCETERA}[aeiouA-Z][:letter:]*|{APOS}cause|"
        "cont'd\\.?|'twas|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l|O{APOSETCETERA}o"},
    {"APOWORD2", "y{APOS}"},
    {"FULLURL", "https?:\\/\\/[^ \\t\\n\\f\\r\\\"<>|(){}]+[^ \\t\\n\\f\\r\\\"<>|.!?(){},-]"},
    {"LIKELYURL", "((www\\.([^ \\t\\n\\f\\r\\\"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4})|"
        "(([^ \\t\\n\\f\\r\\\"`'<>|.!?(){},-_$]+\\.)+(com|net|org|"
        "edu)))(\\/[^ \\t\\n\\f\\r\\\"<>|()]+[^ \\t\\n\\f\\r\\\"<>|.!?(){},-])?"},
    {"EMAIL", "(&lt;|<)?[a-zA-Z0-9][^ \\t\\n\\f\\r\\\"<>|()\\u00A0{}]*@([^ \\t\\n\\f\\r\\\"<>|"
        "(){}.\\u00A0]+\\.)*([^ \\t\\n\\f\\r\\\"<>|(){}.\\u00A0]+)(&gt;|>)?"},
    {"TWITTER_NAME", "@[a-zA-Z_][a-zA-Z_0-9]*"},
    {"TWITTER_CATEGORY", "#{LETTER}+"},
    {"TWITTER", "{TWITTER_NAME}|{TWITTER_CATEGORY}"},
    {"ABMONTH", "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"},
    {"ABDAYS", "Mon|Tue|Tues|Wed|Thu|Thurs|Fri"},
    {"ABSTATE", "Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|"
        "[L]a|[M]ass|Md|Mich|Minn|[M]iss|Mo|Mont|Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|"
        "Vt|[W]ash|Wisc?|Wyo"},
    {"ABCOMP", "Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys"},
    {"ABNUM", "tel|est|ext|sq"},
    {"ABPTIT", "Jr|Sr|Bros|(Ed|Ph)\\.D|Blvd|Rd|Esq"},
    {"ABBREV1", "({ABMONTH}|{ABDAYS}|{ABSTATE}|{ABCOMP}|{ABNUM}|{ABPTIT}|etc|al|seq|Bldg)\\."},
    {"ACRO", "[A-Za-z](\\.[A-Za-z])*|(Canada|Sino|Korean|EU|Japan|non)-U\\.S|U\\.S\\.-(U\\.K|"
        "U\\.S\\.S\\.R)"},
    {"ACRO2", "[A-Za-z](\\.[A-Za-z])+|(Canada|Sino|Korean|EU|Japan|non)-U\\.S|U\\.S\\.-(U\\.K|"
        "U\\.S\\.S\\.R)"},
    {"ABTITLE", "Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|"
        "Rev|Maj|Sgt|Cpl|Pvt|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|"
        "Ft|Adj|Adv|Asst|Assoc|Ens|Insp|Mlle|Mme|Msgr|Sfc"},
    {"ABCOMP2", "Invt|Elec|Natl|M[ft]g|Dept"},
    {"ABBREV4", "{ABTITLE}|vs|Alex|Wm|Jos|Cie|a\\.k\\.a|cf|TREAS|Ph|{ACRO}|{ABCOMP2}"},
    {"ABBREV2", "{ABBREV4}\\."},
    {"ACRONYM", "({ACRO})\\."},
    {"ABBREV3", "(ca|figs?|prop|nos?|art|bldg|prop|pp|op)\\."},
    {"PHONE", "(\\([0-9]{2,3}\\)[ \\u00A0]?|(\\+\\+?)?([0-9]{2,4}[\\- \\u00A0])?[0-9]{2,4}[\\- "
        "\\u00A0])[0-9]{3,4}[\\- \\u00A0]?[0-9]{3,5}|"
        "((\\+\\+?)?[0-9]{2,4}\\.)?[0-9]{2,4}\\.[0-9]{3,4}\\.[0-9]{3,5}"},
    {"FAKEDUCKFEET", "<<|>>"},
    {"LESSTHAN", "<|&lt;"},
    {"GREATERTHAN", ">|&gt;"},
    {"HYPHEN", "[-_\\u058A\\u2010\\u2011]"},
    {"HYPHENS", "\\-+"},
    {"LDOTS", "\\.{3,5}|(\\.[ \\u00A0]){2,4}\\.|[\\u0085\\u2026]"},
    {"ATS", "@+"},
    {"UNDS", "_+"},
    {"ASTS", "\\*+|(\\\\\\*){1,3}"},
    {"HASHES", "#+"},
    {"FNMARKS", "{ATS}|{HASHES}|{UNDS}"},
    {"INSENTP", "[,;:\\u3001]"},
    {"QUOTES", "{APOS}|''|[`\\u2018\\u2019\\u201A\\u201B\\u201C\\u201D\\u0091\\u0092\\u0093\\u0"
        "094\\u201E\\u201F\\u2039\\u203A\\u00AB\\u00BB]{1,2}"},
    {"DBLQUOT", "\\\"|&quot;"},
    {"TBSPEC", "-(RRB|LRB|RCB|LCB|RSB|LSB)-|C\\.D\\.s|pro-|anti-|S(&|&amp;)P-500|S(&|&amp;)Ls|"
        "Cap{APOS}n|c{APOS}est"},
    {"TBSPEC2", "{APOS}[0-9][0-9]"},
    {"SMILEY", "[<>]?[:;=][\\-o\\*']?[\\(\\)DPdpO\\\\{@\\|\\[\\]]"},
    {"ASIANSMILEY", "[\\^x=~<>]\\.\\[\\^x=~<>]|[\\-\\^x=~<>']_[\\-\\^x=~<>']|"
        "\\([\\-\\^x=~<>'][_.]?[\\-\\^x=~<>']\\)|\\([\\^x=~<>']-[\\^x=~<>'`]\\)"},
    {"MISCSYMBOL", "[+%&~\\^|\\\\\\u00A6\\u00A7\\u00A8\\u00A9\\u00AC\\u00AE\\u00AF\\u00B0-\\u00"
        "B3\\u00B4-\\u00BA\\u00D7\\u00F7\\u0387\\u05BE\\u05C0\\u05C3\\u05C6\\u05F3\\u05F4\\u0"
        "600-\\u0603\\u0606-\\u060A\\u060C\\u0614\\u061B\\u061E\\u066A\\u066D\\u0703-\\u070D"
        "\\u07F6\\u07F7\\u07F8\\u0964\\u0965\\u0E4F\\u1FBD\\u2016\\u2017\\u2020-\\u2023\\u203"
        "0-\\u2038\\u203B\\u203E-\\u2042\\u2044\\u207A-\\u207F\\u208A-\\u208E\\u2100-\\u214F"
        "\\u2190-\\u21FF\\u2200-\\u2BFF\\u3012\\u30FB\\uFF01-\\uFF0F\\uFF1A-\\uFF20\\uFF3B-\\"
        "uFF40\\uFF5B-\\uFF65\\uFF65]"},
};
static const struct ptb_rule ptb_rules[] = {
    {"c[+][+]", ACT_PLAIN, 0, NULL},
    {"(c|f)#", ACT_PLAIN, 0, NULL},
    {"cannot", ACT_PUSHBACK, 3, NULL},
    {"'twas", ACT_PUSHBACK, 3, NULL},
    {"'tis", ACT_PUSHBACK, 2, NULL},
    {"gonna|gotta|lemme|gimme|wanna", ACT_PUSHBACK, 2, NULL},
    {"{SGML}", ACT_NBSP, 0, NULL},
    {"{SPMDASH}", ACT_LITERAL, 0, "--"},
    {"{SPAMP}", ACT_AMP, 0, NULL},
    {"{SPPUNC}", ACT_PLAIN, 0, NULL},
    {"{WORD}/{REDAUX}", ACT_SOFTHYPH, 0, NULL},
    {"{SWORD}/{SREDAUX}", ACT_SOFTHYPH, 0, NULL},
    {"{WORD}", ACT_SOFTHYPH, 0, NULL},
    {"{APOWORD}", ACT_PLAIN, 0, NULL},
    {"{APOWORD2}/[:letter:]", ACT_PLAIN, 0, NULL},
    {"{FULLURL}", ACT_PLAIN, 0, NULL},
    {"{LIKELYURL}", ACT_PLAIN, 0, NULL},
    {"{EMAIL}", ACT_PLAIN, 0, NULL},
    {"{TWITTER}", ACT_PLAIN, 0, NULL},
    {"{REDAUX}/[^A-Za-z]", ACT_QUOTE_RIGHT, 0, NULL},
    {"{SREDAUX}/[^A-Za-z]", ACT_QUOTE_RIGHT, 0, NULL},
    {"{DATE}", ACT_PLAIN, 0, NULL},
    {"{NUMBER}", ACT_SOFTHYPH, 0, NULL},
    {"{SUBSUPNUM}", ACT_PLAIN, 0, NULL},
    {"{FRAC}", ACT_NBSP, 0, NULL},
    {"{FRAC2}", ACT_FRACTION, 0, NULL},
    {"{TBSPEC}", ACT_AMP, 0, NULL},
    {"{THING3}", ACT_PLAIN, 0, NULL},
    {"{DOLSIGN}", ACT_PLAIN, 0, NULL},
    {"{DOLSIGN2}", ACT_CURRENCY, 0, NULL},
    {"{ACRONYM}/({SPACENLS})([A]bout|[A]ccording|[A]dditionally|[A]fter|[A]n|[A]|[A]s|[A]t|"
     "[B]ut|[E]arlier|[H]e|[H]er|[H]ere|[H]owever|[I]f|[I]n|[I]t|[L]ast|[M]any|[M]ore|"
     "[M]r\\.|[M]s\\.|[N]ow|[O]nce|[O]ne|[O]ther|[O]ur|[S]he|[S]ince|[S]o|[S]ome|[S]uch|"
     "[T]hat|[T]he|[T]heir|[T]hen|[T]here|[T]hese|[T]hey|[T]his|[W]e|[W]hen|[W]hile|[W]hat|"
     "[Y]et|[Y]ou|{SGML}){SPACENL}", ACT_ACRONYM, 0, NULL},
    {"{ABBREV3}/{SPACENL}?[:digit:]", ACT_PLAIN, 0, NULL},
    {"(pt[eyEY]|co)\\./{SPACE}(ltd|lim)", ACT_PLAIN, 0, NULL},
    {"{ABBREV1}/{SENTEND}", ACT_ABBREV1, 0, NULL},
    {"{ABBREV1}/[^][^]", ACT_PLAIN, 0, NULL},
    {"{ABBREV1}", ACT_ABBREV1, 0, NULL},
    {"{ABBREV2}", ACT_PLAIN, 0, NULL},
    {"{ABBREV4}/{SPACE}", ACT_PLAIN, 0, NULL},
    {"{ACRO}/{SPACENL}", ACT_PLAIN, 0, NULL},
    {"{TBSPEC2}/{SPACENL}", ACT_PLAIN, 0, NULL},
    {"{FILENAME}/({SPACENL}|[.?!,])", ACT_PLAIN, 0, NULL},
    {"{WORD}\\./{INSENTP}", ACT_SOFTHYPH, 0, NULL},
    {"{PHONE}", ACT_PHONE, 0, NULL},
    {"{DBLQUOT}/[A-Za-z0-9$]", ACT_QUOTE_LEFT, 0, NULL},
    {"{DBLQUOT}", ACT_QUOTE_RIGHT, 0, NULL},
    {"\\x7f", ACT_SKIP, 0, NULL},
    {"{LESSTHAN}", ACT_LITERAL, 0, "<"},
    {"{GREATERTHAN}", ACT_LITERAL, 0, ">"},
    {"{SMILEY}/[^A-Za-z0-9]", ACT_PARENS, 0, NULL},
    {"{ASIANSMILEY}", ACT_PARENS, 0, NULL},
    {"\\{", ACT_LITERAL, 0, "-LCB-"},
    {"\\}", ACT_LITERAL, 0, "-RCB-"},
    {"\\[", ACT_LITERAL, 0, "-LSB-"},
    {"\\]", ACT_LITERAL, 0, "-RSB-"},
    {"\\(", ACT_LITERAL, 0, "-LRB-"},
    {"\\)", ACT_LITERAL, 0, "-RRB-"},
    {"{HYPHENS}", ACT_HYPHENS, 0, NULL},
    {"{LDOTS}", ACT_LITERAL, 0, "..."},
    {"{FNMARKS}", ACT_PLAIN, 0, NULL},
    {"{ASTS}", ACT_PLAIN, 0, NULL},
    {"{INSENTP}", ACT_PLAIN, 0, NULL},
    {"[?!]+", ACT_PLAIN, 0, NULL},
    {"[.\\u00A1\\u00BF\\u037E\\u0589\\u061F\\u06D4\\u0700-\\u0702\\u07FA\\u3002]", ACT_PLAIN, 0,
     NULL},
    {"=", ACT_PLAIN, 0, NULL},
    {"\\/", ACT_PLAIN, 0, NULL},
    {"{HTHING}\\./{INSENTP}", ACT_SOFTHYPH, 0, NULL},
    {"{HTHING}", ACT_SOFTHYPH, 0, NULL},
    {"{THING}\\./{INSENTP}", ACT_PLAIN, 0, NULL},
    {"{THING}", ACT_PLAIN, 0, NULL},
    {"{THINGA}\\./{INSENTP}", ACT_AMP, 0, NULL},
    {"{THINGA}", ACT_AMP, 0, NULL},
    {"'/[A-Za-z][^ \\t\\n\\r\\u00A0]", ACT_QUOTE_LEFT, 0, NULL},
    {"{REDAUX}", ACT_QUOTE_RIGHT, 0, NULL},
    {"{SREDAUX}", ACT_QUOTE_RIGHT, 0, NULL},
    {"{QUOTES}", ACT_QUOTE_RIGHT, 0, NULL},
    {"{FAKEDUCKFEET}", ACT_PLAIN, 0, NULL},
    {"{MISCSYMBOL}", ACT_PLAIN, 0, NULL},
    {"\\0|{SPACES}|[\\u200B\\u200E-\\u200F\\uFEFF]", ACT_SKIP, 0, NULL},
    {"{NEWLINE}", ACT_SKIP, 0, NULL},
    {"&nbsp;", ACT_SKIP, 0, NULL},
    {".", ACT_SKIP, 0, NULL},
};

#define NUM_MACROS (sizeof ptb_macros / sizeof ptb_macros[0])
#define NUM_RULES (sizeof ptb_rules / sizeof ptb_rules[0])

/* ---- character classes --------------------------------------------------------------- */

enum { PRED_LETTER = 1, PRED_DIGIT = 2, PRED_UPPER = 4 };

/* A set of UTF-16 code units: sorted disjoint ranges, JFlex's predefined classes, and a
 * negation. */
struct cclass {
  uint32_t *lo, *hi;
  int n;
  uint8_t pred;
  bool neg;
};

/* The predefined classes a code unit is in (surrogates: none). */
static uint8_t unit_preds(uint32_t c) {
  if (c >= 0xD800 && c <= 0xDFFF) return 0;
  switch (utf8proc_category((utf8proc_int32_t)c)) {
  case UTF8PROC_CATEGORY_LU: return PRED_LETTER | PRED_UPPER;
  case UTF8PROC_CATEGORY_LL:
  case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_LO: return PRED_LETTER;
  case UTF8PROC_CATEGORY_ND: return PRED_DIGIT;
  default: return 0;
  }
}

static bool class_has(const struct cclass *k, uint32_t c, uint8_t preds) {
  bool in = (k->pred & preds) != 0;
  if (!in) {
    int a = 0, b = k->n;
    while (a < b) {
      int m = (a + b) / 2;
      if (c < k->lo[m]) b = m;
      else if (c > k->hi[m]) a = m + 1;
      else {
        in = true;
        break;
      }
    }
  }
  return in != k->neg;
}

/* ---- the compiled program ------------------------------------------------------------ */

enum { OP_CLASS, OP_SPLIT, OP_JMP, OP_MATCH };

struct inst {
  int op, a, b; /* CLASS: a = class; SPLIT: a then b; JMP: a */
};

enum { AST_EMPTY, AST_CLASS, AST_CAT, AST_ALT, AST_REP };

struct ast {
  int kind, a, b, min, max; /* CLASS: a = class; CAT, ALT: a b; REP: a{min,max}, max -1 = inf */
};

/* A program's start: the CLASS states reachable from its first instruction without
 * input (computed once: the big alternations make it the costly part of a run). */
struct start {
  int pc, *states, n;
};

struct crule {
  struct start r1, r2; /* r2.pc -1: no trailing context */
  uint32_t first[4];   /* the ASCII units a match can start with */
  bool first_other;    /* whether it can start with any other unit */
};

struct ptb_lexer {
  struct cclass *cls;
  int ncls, capcls;
  struct inst *code;
  int ncode, capcode;
  struct ast *ast;
  int nast, capast;
  struct crule rules[NUM_RULES];
  bool bad; /* out of memory, or a specification this parser cannot read */
  /* simulation scratch, sized by ncode */
  int *cur, *nxt, *stack;
  uint32_t *mark, gen;
  /* one line: its units and their predefined classes */
  uint32_t *u;
  uint8_t *pr;
  size_t n, capu;
  size_t *ends;
  /* a token being built, in units, then code points */
  uint32_t *tok, *cps, *low;
  size_t ntok, captok, ncps, capcps, nlow, caplow;
};

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

static bool grow_int(void **p, int *cap, int need, size_t size) {
  size_t c = (size_t)*cap;
  bool ok = grow(p, &c, (size_t)need, size);
  if (ok) *cap = (int)c;
  return ok;
}

static int new_ast(struct ptb_lexer *lx, int kind, int a, int b, int min, int max) {
  if (!grow_int((void **)&lx->ast, &lx->capast, lx->nast + 1, sizeof *lx->ast)) {
    lx->bad = true;
    return 0;
  }
  lx->ast[lx->nast] = (struct ast){kind, a, b, min, max};
  return lx->nast++;
}

/* A class from unsorted, possibly overlapping ranges (pairs in r). */
static int new_class(struct ptb_lexer *lx, uint32_t *r, int npairs, uint8_t pred, bool neg) {
  if (!grow_int((void **)&lx->cls, &lx->capcls, lx->ncls + 1, sizeof *lx->cls)) {
    lx->bad = true;
    return 0;
  }
  /* insertion sort by lo, then merge */
  for (int i = 1; i < npairs; i++)
    for (int j = i; j > 0 && r[2 * j] < r[2 * (j - 1)]; j--) {
      uint32_t t0 = r[2 * j], t1 = r[2 * j + 1];
      r[2 * j] = r[2 * (j - 1)];
      r[2 * j + 1] = r[2 * (j - 1) + 1];
      r[2 * (j - 1)] = t0;
      r[2 * (j - 1) + 1] = t1;
    }
  struct cclass k = {.pred = pred, .neg = neg};
  k.lo = malloc((size_t)(npairs ? npairs : 1) * sizeof *k.lo);
  k.hi = malloc((size_t)(npairs ? npairs : 1) * sizeof *k.hi);
  if (!k.lo || !k.hi) {
    free(k.lo);
    free(k.hi);
    lx->bad = true;
    return 0;
  }
  for (int i = 0; i < npairs; i++) {
    if (k.n > 0 && r[2 * i] <= k.hi[k.n - 1] + 1) {
      if (r[2 * i + 1] > k.hi[k.n - 1]) k.hi[k.n - 1] = r[2 * i + 1];
    } else {
      k.lo[k.n] = r[2 * i];
      k.hi[k.n++] = r[2 * i + 1];
    }
  }
  lx->cls[lx->ncls] = k;
  return lx->ncls++;
}

/* ---- parsing JFlex regular expressions ----------------------------------------------- */

struct parser {
  struct ptb_lexer *lx;
  const char *s;
  size_t i;
  int depth; /* macro nesting */
};

static int parse_regex(struct parser *p);

static int hexval(const char *s, int ndig) {
  int v = 0;
  for (int k = 0; k < ndig; k++) {
    char c = s[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* The unit an escape at p->s[p->i] == '\\' stands for. */
static uint32_t parse_escape(struct parser *p) {
  const char *s = p->s;
  char c = s[++p->i];
  if (c == 'u' || c == 'x') {
    int nd = c == 'u' ? 4 : 2, v = hexval(s + p->i + 1, nd);
    if (v < 0) {
      p->lx->bad = true;
      p->i = strlen(s);
      return 0;
    }
    p->i += 1 + (size_t)nd;
    return (uint32_t)v;
  }
  if (c >= '0' && c <= '7') { /* octal, up to three digits (only \0 occurs) */
    uint32_t v = 0;
    for (int k = 0; k < 3 && s[p->i] >= '0' && s[p->i] <= '7'; k++)
      v = v * 8 + (uint32_t)(s[p->i++] - '0');
    return v;
  }
  if (c == '\0') {
    p->lx->bad = true;
    return 0;
  }
  p->i++;
  switch (c) {
  case 't': return '\t';
  case 'n': return '\n';
  case 'r': return '\r';
  case 'f': return '\f';
  case 'b': return '\b';
  default: return (uint32_t)(unsigned char)c;
  }
}

/* [:letter:], [:digit:] or [:uppercase:] at p->i: its PRED_ bit (consumed), or 0. */
static uint8_t parse_predefined(struct parser *p) {
  static const struct {
    const char *tag;
    uint8_t pred;
  } pre[] = {{"[:letter:]", PRED_LETTER}, {"[:digit:]", PRED_DIGIT}, {"[:uppercase:]", PRED_UPPER}};
  for (size_t k = 0; k < sizeof pre / sizeof pre[0]; k++) {
    size_t len = strlen(pre[k].tag);
    if (!strncmp(p->s + p->i, pre[k].tag, len)) {
      p->i += len;
      return pre[k].pred;
    }
  }
  return 0;
}

static uint32_t class_item(struct parser *p) {
  if (p->s[p->i] == '\\') return parse_escape(p);
  return (uint32_t)(unsigned char)p->s[p->i++];
}

/* A character class at p->s[p->i] == '['. */
static int parse_class(struct parser *p) {
  uint8_t pred = parse_predefined(p);
  if (pred) return new_ast(p->lx, AST_CLASS, new_class(p->lx, NULL, 0, pred, false), 0, 0, 0);
  p->i++;
  bool neg = p->s[p->i] == '^';
  if (neg) p->i++;
  uint32_t *r = NULL;
  size_t cap = 0;
  int n = 0;
  while (p->s[p->i] != ']') {
    if (!p->s[p->i]) {
      p->lx->bad = true;
      break;
    }
    uint8_t pr = parse_predefined(p);
    if (pr) {
      pred |= pr;
      continue;
    }
    uint32_t lo = class_item(p), hi = lo;
    if (p->s[p->i] == '-' && p->s[p->i + 1] != ']' && p->s[p->i + 1]) {
      p->i++;
      hi = class_item(p);
    }
    if (!grow((void **)&r, &cap, 2 * (size_t)n + 2, sizeof *r)) {
      p->lx->bad = true;
      break;
    }
    r[2 * n] = lo;
    r[2 * n + 1] = hi;
    n++;
  }
  if (p->s[p->i] == ']') p->i++;
  int k = new_class(p->lx, r, n, pred, neg);
  free(r);
  return new_ast(p->lx, AST_CLASS, k, 0, 0, 0);
}

/* One literal unit; %caseless: an ASCII letter matches both cases. */
static int literal(struct ptb_lexer *lx, uint32_t c) {
  uint32_t r[4] = {c, c, c, c};
  int n = 1;
  if (c < 128 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) {
    r[2] = r[3] = c ^ 0x20;
    n = 2;
  }
  return new_ast(lx, AST_CLASS, new_class(lx, r, n, 0, false), 0, 0, 0);
}

static int parse_atom(struct parser *p) {
  struct ptb_lexer *lx = p->lx;
  char c = p->s[p->i];
  if (c == '(') {
    p->i++;
    int e = parse_regex(p);
    if (p->s[p->i] == ')') p->i++;
    else lx->bad = true;
    return e;
  }
  if (c == '[') return parse_class(p);
  if (c == '{') { /* a macro (a repetition {n,m} is handled by parse_piece) */
    const char *end = strchr(p->s + p->i, '}');
    if (!end) {
      lx->bad = true;
      return new_ast(lx, AST_EMPTY, 0, 0, 0, 0);
    }
    size_t len = (size_t)(end - (p->s + p->i + 1));
    const char *name = p->s + p->i + 1;
    p->i += len + 2;
    for (size_t k = 0; k < NUM_MACROS; k++)
      if (strlen(ptb_macros[k].name) == len && !strncmp(ptb_macros[k].name, name, len)) {
        if (p->depth > 16) break;
        struct parser q = {lx, ptb_macros[k].re, 0, p->depth + 1};
        int e = parse_regex(&q);
        if (q.s[q.i]) lx->bad = true;
        return e;
      }
    lx->bad = true;
    return new_ast(lx, AST_EMPTY, 0, 0, 0, 0);
  }
  if (c == '.') { /* any unit but '\n' */
    p->i++;
    uint32_t r[2] = {'\n', '\n'};
    return new_ast(lx, AST_CLASS, new_class(lx, r, 1, 0, true), 0, 0, 0);
  }
  return literal(lx, c == '\\' ? parse_escape(p) : (uint32_t)(unsigned char)p->s[p->i++]);
}

static int parse_piece(struct parser *p) {
  int e = parse_atom(p);
  for (;;) {
    char c = p->s[p->i];
    if (c == '*' || c == '+' || c == '?') {
      p->i++;
      e = new_ast(p->lx, AST_REP, e, 0, c == '+' ? 1 : 0, c == '?' ? 1 : -1);
    } else if (c == '{' && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9') {
      char *end;
      long min = strtol(p->s + p->i + 1, &end, 10), max = min;
      if (*end == ',') max = strtol(end + 1, &end, 10);
      if (*end != '}' || max < min) p->lx->bad = true;
      p->i = (size_t)(end - p->s) + 1;
      e = new_ast(p->lx, AST_REP, e, 0, (int)min, (int)max);
    } else {
      return e;
    }
  }
}

static int parse_branch(struct parser *p) {
  int e = -1;
  while (p->s[p->i] && p->s[p->i] != '|' && p->s[p->i] != ')') {
    int f = parse_piece(p);
    e = e < 0 ? f : new_ast(p->lx, AST_CAT, e, f, 0, 0);
  }
  return e < 0 ? new_ast(p->lx, AST_EMPTY, 0, 0, 0, 0) : e;
}

static int parse_regex(struct parser *p) {
  int e = parse_branch(p);
  while (p->s[p->i] == '|') {
    p->i++;
    e = new_ast(p->lx, AST_ALT, e, parse_branch(p), 0, 0);
  }
  return e;
}

/* ---- compiling to a Thompson NFA ----------------------------------------------------- */

static int emit(struct ptb_lexer *lx, int op, int a, int b) {
  if (!grow_int((void **)&lx->code, &lx->capcode, lx->ncode + 1, sizeof *lx->code)) {
    lx->bad = true;
    return 0;
  }
  lx->code[lx->ncode] = (struct inst){op, a, b};
  return lx->ncode++;
}

static void compile(struct ptb_lexer *lx, int e) {
  if (lx->bad) return;
  struct ast t = lx->ast[e];
  switch (t.kind) {
  case AST_EMPTY: break;
  case AST_CLASS: emit(lx, OP_CLASS, t.a, 0); break;
  case AST_CAT:
    compile(lx, t.a);
    compile(lx, t.b);
    break;
  case AST_ALT: {
    int split = emit(lx, OP_SPLIT, 0, 0);
    if (lx->bad) return;
    lx->code[split].a = lx->ncode;
    compile(lx, t.a);
    int jmp = emit(lx, OP_JMP, 0, 0);
    if (lx->bad) return;
    lx->code[split].b = lx->ncode;
    compile(lx, t.b);
    lx->code[jmp].a = lx->ncode;
    break;
  }
  case AST_REP:
    for (int k = 0; k < t.min; k++) compile(lx, t.a);
    if (t.max < 0) {
      int split = emit(lx, OP_SPLIT, 0, 0);
      if (lx->bad) return;
      lx->code[split].a = lx->ncode;
      compile(lx, t.a);
      emit(lx, OP_JMP, split, 0);
      if (lx->bad) return;
      lx->code[split].b = lx->ncode;
    } else {
      for (int k = t.min; k < t.max && !lx->bad; k++) {
        int split = emit(lx, OP_SPLIT, 0, 0);
        if (lx->bad) return;
        lx->code[split].a = lx->ncode;
        compile(lx, t.a);
        lx->code[split].b = lx->ncode;
      }
    }
    break;
  default: lx->bad = true;
  }
}

/* Parses and compiles re[0..len) as one program; its start. */
static int compile_pattern(struct ptb_lexer *lx, const char *re, size_t len) {
  char *copy = malloc(len + 1);
  if (!copy) {
    lx->bad = true;
    return 0;
  }
  memcpy(copy, re, len);
  copy[len] = '\0';
  struct parser p = {lx, copy, 0, 0};
  lx->nast = 0;
  int e = parse_regex(&p);
  if (copy[p.i]) lx->bad = true; /* a stray ')' */
  int start = lx->ncode;
  compile(lx, e);
  emit(lx, OP_MATCH, 0, 0);
  free(copy);
  return start;
}

/* Where r1/r2 splits: the top-level '/' outside classes and escapes, or strlen(re). */
static size_t trailing_slash(const char *re) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = 0; re[i]; i++) {
    char c = re[i];
    if (c == '\\') {
      if (re[i + 1]) i++;
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      if (!strncmp(re + i, "[:", 2)) {
        const char *e = strstr(re + i, ":]");
        if (e) i = (size_t)(e - re) + 1;
      } else if (!strncmp(re + i, "[^]", 3)) {
        i += 2;
      } else {
        in_class = true;
      }
    } else if (c == '(') {
      depth++;
    } else if (c == ')') {
      depth--;
    } else if (c == '/' && depth == 0) {
      return i;
    }
  }
  return strlen(re);
}

/* ---- simulation ---------------------------------------------------------------------- */

/* Adds pc and everything reachable from it without input to list; *matched when a MATCH
 * is reachable. */
static void add_state(struct ptb_lexer *lx, int *list, int *n, int pc, bool *matched) {
  int sp = 0;
  lx->stack[sp++] = pc;
  while (sp > 0) {
    pc = lx->stack[--sp];
    if (lx->mark[pc] == lx->gen) continue;
    lx->mark[pc] = lx->gen;
    const struct inst *in = &lx->code[pc];
    switch (in->op) {
    case OP_CLASS: list[(*n)++] = pc; break;
    case OP_MATCH: *matched = true; break;
    case OP_JMP: lx->stack[sp++] = in->a; break;
    default:
      lx->stack[sp++] = in->b;
      lx->stack[sp++] = in->a;
      break;
    }
  }
}

static void next_gen(struct ptb_lexer *lx) {
  if (++lx->gen == 0) {
    memset(lx->mark, 0, (size_t)lx->ncode * sizeof *lx->mark);
    lx->gen = 1;
  }
}

/* The longest non-empty match of the program st on lx->u[pos..n): its end, or 0.
 * With ends, every end of a match is stored there too (ascending), *nends their count. */
static size_t run(struct ptb_lexer *lx, const struct start *st, size_t pos, size_t *ends,
                  size_t *nends) {
  const int *cur = st->states;
  int nc = st->n;
  bool matched = false;
  size_t best = 0;
  for (size_t i = pos; i < lx->n && nc > 0; i++) {
    uint32_t c = lx->u[i];
    uint8_t pr = lx->pr[i];
    int nn = 0;
    matched = false;
    next_gen(lx);
    for (int k = 0; k < nc; k++) {
      int pc = cur[k];
      if (class_has(&lx->cls[lx->code[pc].a], c, pr)) add_state(lx, lx->nxt, &nn, pc + 1, &matched);
    }
    if (matched) {
      best = i + 1;
      if (ends) ends[(*nends)++] = i + 1;
    }
    int *t = lx->cur;
    lx->cur = lx->nxt;
    lx->nxt = t;
    cur = lx->cur;
    nc = nn;
  }
  return best;
}

/* The start of the program at pc (states malloc'd); false: out of memory. */
static bool make_start(struct ptb_lexer *lx, int pc, struct start *st) {
  int nc = 0;
  bool matched = false;
  next_gen(lx);
  add_state(lx, lx->cur, &nc, pc, &matched);
  st->pc = pc;
  st->n = nc;
  st->states = malloc((size_t)(nc ? nc : 1) * sizeof *st->states);
  if (!st->states) return false;
  memcpy(st->states, lx->cur, (size_t)nc * sizeof *st->states);
  return true;
}

/* The units a rule's match can start with. */
static void first_units(struct ptb_lexer *lx, struct crule *r) {
  memset(r->first, 0, sizeof r->first);
  r->first_other = false;
  for (int k = 0; k < r->r1.n; k++) {
    const struct cclass *cl = &lx->cls[lx->code[r->r1.states[k]].a];
    for (uint32_t c = 0; c < 128; c++)
      if (class_has(cl, c, unit_preds(c))) r->first[c / 32] |= 1u << (c % 32);
    if (cl->neg || cl->pred || (cl->n > 0 && cl->hi[cl->n - 1] >= 128)) r->first_other = true;
  }
}

struct ptb_lexer *ptb_lexer_create(void) {
  struct ptb_lexer *lx = calloc(1, sizeof *lx);
  if (!lx) return NULL;
  for (size_t k = 0; k < NUM_RULES && !lx->bad; k++) {
    const char *re = ptb_rules[k].re;
    size_t slash = trailing_slash(re);
    lx->rules[k].r1.pc = compile_pattern(lx, re, slash);
    lx->rules[k].r2.pc = -1;
    if (re[slash]) lx->rules[k].r2.pc = compile_pattern(lx, re + slash + 1, strlen(re + slash + 1));
  }
  free(lx->ast);
  lx->ast = NULL;
  if (!lx->bad) {
    size_t n = (size_t)lx->ncode;
    lx->cur = malloc(n * sizeof *lx->cur);
    lx->nxt = malloc(n * sizeof *lx->nxt);
    lx->stack = malloc((2 * n + 1) * sizeof *lx->stack);
    lx->mark = calloc(n, sizeof *lx->mark);
    if (!lx->cur || !lx->nxt || !lx->stack || !lx->mark) lx->bad = true;
  }
  for (size_t k = 0; k < NUM_RULES && !lx->bad; k++) {
    struct crule *r = &lx->rules[k];
    if (!make_start(lx, r->r1.pc, &r->r1) || (r->r2.pc >= 0 && !make_start(lx, r->r2.pc, &r->r2)))
      lx->bad = true;
    else
      first_units(lx, r);
  }
  if (lx->bad) {
    ptb_lexer_free(lx);
    return NULL;
  }
  return lx;
}

void ptb_lexer_free(struct ptb_lexer *lx) {
  if (!lx) return;
  for (size_t k = 0; k < NUM_RULES; k++) {
    free(lx->rules[k].r1.states);
    free(lx->rules[k].r2.states);
  }
  for (int k = 0; k < lx->ncls; k++) {
    free(lx->cls[k].lo);
    free(lx->cls[k].hi);
  }
  free(lx->cls);
  free(lx->code);
  free(lx->ast);
  free(lx->cur);
  free(lx->nxt);
  free(lx->stack);
  free(lx->mark);
  free(lx->u);
  free(lx->pr);
  free(lx->ends);
  free(lx->tok);
  free(lx->cps);
  free(lx->low);
  free(lx);
}

/* ---- scanning a line ----------------------------------------------------------------- */

/* Decodes UTF-8 text into UTF-16 units in lx->u (plus a final '\n' unless eof_after),
 * newlines becoming spaces when nl_to_space. */
static int load_units(struct ptb_lexer *lx, const char *text, size_t len, bool eof_after,
                      bool nl_to_space, size_t *bad_at) {
  lx->n = 0;
  if (!grow((void **)&lx->u, &lx->capu, 2 * len + 2, sizeof *lx->u)) return PTB_NOMEM;
  size_t i = 0;
  while (i < len) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k =
        utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
    if (k < 0) {
      if (bad_at) *bad_at = i;
      return PTB_BAD_UTF8;
    }
    i += (size_t)k;
    if (c == '\n' && nl_to_space) c = ' ';
    if (c >= 0x10000) {
      lx->u[lx->n++] = 0xD800 + (((uint32_t)c - 0x10000) >> 10);
      lx->u[lx->n++] = 0xDC00 + (((uint32_t)c - 0x10000) & 0x3FF);
    } else {
      lx->u[lx->n++] = (uint32_t)c;
    }
  }
  if (!eof_after) lx->u[lx->n++] = '\n';
  /* room for the simulation's ends and the predefined classes of every unit */
  size_t cap = lx->capu;
  uint8_t *pr = realloc(lx->pr, cap * sizeof *pr);
  if (!pr) return PTB_NOMEM;
  lx->pr = pr;
  size_t *ends = realloc(lx->ends, (cap + 1) * sizeof *ends);
  if (!ends) return PTB_NOMEM;
  lx->ends = ends;
  for (size_t j = 0; j < lx->n; j++) lx->pr[j] = unit_preds(lx->u[j]);
  return PTB_OK;
}

static bool tok_push(struct ptb_lexer *lx, uint32_t c) {
  if (!grow((void **)&lx->tok, &lx->captok, lx->ntok + 1, sizeof *lx->tok)) return false;
  lx->tok[lx->ntok++] = c;
  return true;
}

static bool tok_str(struct ptb_lexer *lx, const char *s) {
  for (; *s; s++)
    if (!tok_push(lx, (uint32_t)(unsigned char)*s)) return false;
  return true;
}

/* Whether the units at s (n of them) start with the ASCII string a (case-sensitive unless
 * fold). */
static bool units_start(const uint32_t *s, size_t n, const char *a, bool fold) {
  size_t k = 0;
  for (; a[k]; k++) {
    if (k >= n) return false;
    uint32_t c = s[k], d = (uint32_t)(unsigned char)a[k];
    if (fold && c < 128) c = (uint32_t)((c >= 'A' && c <= 'Z') ? c + 32 : c);
    if (c != d) return false;
  }
  return true;
}

/* The token of rule act for the matched units s[0..n) into lx->tok; *back gets how many
 * units to scan again. false: out of memory. *emit false: the rule makes no token. */
static bool act(struct ptb_lexer *lx, const struct ptb_rule *r, const uint32_t *s, size_t n,
                bool *emit, size_t *back) {
  lx->ntok = 0;
  *emit = true;
  *back = 0;
  switch (r->act) {
  case ACT_SKIP: *emit = false; return true;
  case ACT_LITERAL: return tok_str(lx, r->lit);
  case ACT_PUSHBACK:
    *back = (size_t)r->n;
    for (size_t i = 0; i + (size_t)r->n < n; i++)
      if (!tok_push(lx, s[i])) return false;
    return true;
  case ACT_ACRONYM:
    *back = 1;
    if (n == 2) return tok_push(lx, s[0]);
    for (size_t i = 0; i < n; i++)
      if (!tok_push(lx, s[i])) return false;
    return true;
  case ACT_ABBREV1:
    *back = 1;
    for (size_t i = 0; i < n; i++)
      if (!tok_push(lx, s[i])) return false;
    return true;
  case ACT_HYPHENS:
    if (n >= 3 && n <= 4) return tok_str(lx, "--");
    break;
  case ACT_FRACTION:
    if (n == 1) {
      static const struct {
        uint32_t c;
        const char *s;
      } fr[] = {{0xBC, "1/4"}, {0xBD, "1/2"}, {0xBE, "3/4"}, {0x2153, "1/3"}, {0x2154, "2/3"}};
      for (size_t k = 0; k < sizeof fr / sizeof fr[0]; k++)
        if (s[0] == fr[k].c) return tok_str(lx, fr[k].s);
    }
    break;
  default: break;
  }
  /* The per-unit rewritings. */
  for (size_t i = 0; i < n; i++) {
    uint32_t c = s[i];
    bool ok = true;
    switch (r->act) {
    case ACT_SOFTHYPH:
      if (c != 0xAD) ok = tok_push(lx, c);
      break;
    case ACT_NBSP: ok = tok_push(lx, c == ' ' ? 0xA0 : c); break;
    case ACT_AMP:
      if (units_start(s + i, n - i, "&amp;", true)) {
        ok = tok_push(lx, '&');
        i += 4;
      } else {
        ok = tok_push(lx, c);
      }
      break;
    case ACT_QUOTE_LEFT:
    case ACT_QUOTE_RIGHT: {
      /* latexQuotes: ' and &apos; -> ` (left) or ' (right); " and &quot; -> `` or '';
       * then the typographic quotes by their direction. */
      bool left = r->act == ACT_QUOTE_LEFT;
      if (c == '\'' || units_start(s + i, n - i, "&apos;", false)) {
        ok = tok_str(lx, left ? "`" : "'");
        if (c == '&') i += 5;
      } else if (c == '"' || units_start(s + i, n - i, "&quot;", false)) {
        ok = tok_str(lx, left ? "``" : "''");
        if (c == '&') i += 5;
      } else if (c == 0x91 || c == 0x2018 || c == 0x201B || c == 0x2039) {
        ok = tok_str(lx, "`");
      } else if (c == 0x92 || c == 0x2019 || c == 0x203A) {
        ok = tok_str(lx, "'");
      } else if (c == 0x93 || c == 0x201C || c == 0xAB) {
        ok = tok_str(lx, "``");
      } else if (c == 0x94 || c == 0x201D || c == 0xBB) {
        ok = tok_str(lx, "''");
      } else {
        ok = tok_push(lx, c);
      }
      break;
    }
    case ACT_CURRENCY:
      if (c == 0xA2) ok = tok_str(lx, "cents");
      else if (c == 0xA3) ok = tok_str(lx, "#");
      else if (c == 0x80 || c == 0xA4 || c == 0x20A0 || c == 0x20AC) ok = tok_str(lx, "$");
      else ok = tok_push(lx, c);
      break;
    case ACT_PHONE:
    case ACT_PARENS:
      if (c == '(') ok = tok_str(lx, "-LRB-");
      else if (c == ')') ok = tok_str(lx, "-RRB-");
      else if (c == ' ' && r->act == ACT_PHONE) ok = tok_push(lx, 0xA0);
      else ok = tok_push(lx, c);
      break;
    default: ok = tok_push(lx, c); break;
    }
    if (!ok) return false;
  }
  if (r->act == ACT_SOFTHYPH && lx->ntok == 0) return tok_push(lx, '-');
  return true;
}

/* ---- token output -------------------------------------------------------------------- */

/* lx->tok (units) as code points in lx->cps: surrogate pairs joined, a lone surrogate
 * '?' (what Java's UTF-8 encoder writes for it). */
static bool token_cps(struct ptb_lexer *lx) {
  lx->ncps = 0;
  if (!grow((void **)&lx->cps, &lx->capcps, lx->ntok + 1, sizeof *lx->cps)) return false;
  for (size_t i = 0; i < lx->ntok; i++) {
    uint32_t c = lx->tok[i];
    if (c >= 0xD800 && c < 0xDC00 && i + 1 < lx->ntok && lx->tok[i + 1] >= 0xDC00 &&
        lx->tok[i + 1] < 0xE000) {
      c = 0x10000 + ((c - 0xD800) << 10) + (lx->tok[i + 1] - 0xDC00);
      i++;
    } else if (c >= 0xD800 && c < 0xE000) {
      c = '?';
    }
    lx->cps[lx->ncps++] = c;
  }
  return true;
}

/* lx->cps lowercased into lx->low: String.toLowerCase(Locale.ENGLISH), i.e. the simple
 * mapping plus U+0130 -> "i\u0307" and the final sigma. */
static bool token_lower(struct ptb_lexer *lx) {
  lx->nlow = 0;
  if (!grow((void **)&lx->low, &lx->caplow, 2 * lx->ncps + 1, sizeof *lx->low)) return false;
  for (size_t i = 0; i < lx->ncps; i++) {
    uint32_t c = lx->cps[i];
    if (c == 0x130) {
      lx->low[lx->nlow++] = 'i';
      lx->low[lx->nlow++] = 0x307;
    } else if (c == 0x3A3) {
      lx->low[lx->nlow++] = unicase_final_sigma(lx->cps, lx->ncps, i) ? 0x3C2 : 0x3C3;
    } else {
      lx->low[lx->nlow++] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
    }
  }
  return true;
}

/* Appends code points cp[0..n) as one UTF-8 token to out. */
static bool out_push(struct ptb_tokens *out, const uint32_t *cp, size_t n) {
  if (!grow((void **)&out->buf, &out->cap, out->len + 4 * n + 1, 1) ||
      !grow((void **)&out->off, &out->ncap, out->n + 1, sizeof *out->off))
    return false;
  out->off[out->n++] = out->len;
  for (size_t i = 0; i < n; i++)
    out->len += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp[i],
                                             (utf8proc_uint8_t *)out->buf + out->len);
  out->buf[out->len++] = '\0';
  return true;
}

static bool ascii_space(uint32_t c) { return c == ' ' || (c >= 0x09 && c <= 0x0D); }

/* pycocoevalcap's PUNCTUATIONS, compared with the lowercased token. */
static bool coco_punctuation(const uint32_t *cp, size_t n) {
  static const char *const punct[] = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-",
                                      "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...",
                                      ";"};
  for (size_t k = 0; k < sizeof punct / sizeof punct[0]; k++) {
    size_t len = strlen(punct[k]);
    if (len != n) continue;
    size_t i = 0;
    while (i < n && cp[i] == (uint32_t)(unsigned char)punct[k][i]) i++;
    if (i == n) return true;
  }
  return false;
}

/* Scans lx->u[0..n) and appends its tokens to out: raw, or as coco scores them. */
static int scan(struct ptb_lexer *lx, bool coco, struct ptb_tokens *out) {
  size_t pos = 0;
  while (pos < lx->n) {
    size_t best_total = 0, best_end = 0;
    int best = -1;
    uint32_t c0 = lx->u[pos];
    for (size_t k = 0; k < NUM_RULES; k++) {
      const struct crule *cr = &lx->rules[k];
      if (c0 < 128 ? !(cr->first[c0 / 32] & (1u << (c0 % 32))) : !cr->first_other) continue;
      size_t total = 0, end = 0;
      if (cr->r2.pc < 0) {
        total = end = run(lx, &cr->r1, pos, NULL, NULL);
      } else {
        size_t nends = 0;
        run(lx, &cr->r1, pos, lx->ends, &nends);
        for (size_t j = nends; j-- > 0;) { /* longest r1 first: it keeps a tie */
          size_t e1 = lx->ends[j], e2 = run(lx, &cr->r2, e1, NULL, NULL);
          if (e2 > total) {
            total = e2;
            end = e1;
          }
        }
      }
      if (total > best_total) {
        best_total = total;
        best_end = end;
        best = (int)k;
      }
    }
    if (best < 0) { /* cannot happen: "." and {NEWLINE} match every unit */
      pos++;
      continue;
    }
    bool emit;
    size_t back;
    if (!act(lx, &ptb_rules[best], lx->u + pos, best_end - pos, &emit, &back)) return PTB_NOMEM;
    pos = best_end - back;
    if (!emit) continue;
    if (!token_cps(lx)) return PTB_NOMEM;
    if (!coco) {
      if (!out_push(out, lx->cps, lx->ncps)) return PTB_NOMEM;
      continue;
    }
    if (!token_lower(lx)) return PTB_NOMEM;
    if (coco_punctuation(lx->low, lx->nlow)) continue;
    for (size_t i = 0; i < lx->nlow;) { /* Python 2 str.split() */
      if (ascii_space(lx->low[i])) {
        i++;
        continue;
      }
      size_t j = i;
      while (j < lx->nlow && !ascii_space(lx->low[j])) j++;
      if (!out_push(out, lx->low + i, j - i)) return PTB_NOMEM;
      i = j;
    }
  }
  return PTB_OK;
}

static int tokenize(struct ptb_lexer *lx, const char *text, size_t len, bool eof_after,
                    bool coco, struct ptb_tokens *out, size_t *bad_at) {
  out->len = 0;
  out->n = 0;
  int st = load_units(lx, text, len, eof_after, coco, bad_at);
  if (st == PTB_OK) st = scan(lx, coco, out);
  return st;
}

int ptb_coco_tokens(struct ptb_lexer *lx, const char *text, size_t len, struct ptb_tokens *out,
                    size_t *bad_at) {
  return tokenize(lx, text, len, false, true, out, bad_at);
}

int ptb_lex(struct ptb_lexer *lx, const char *text, size_t len, bool eof_after,
            struct ptb_tokens *out, size_t *bad_at) {
  return tokenize(lx, text, len, eof_after, false, out, bad_at);
}

void ptb_tokens_free(struct ptb_tokens *t) {
  free(t->buf);
  free(t->off);
  memset(t, 0, sizeof *t);
}
