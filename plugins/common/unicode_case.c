/* Unicode case rules shared by the text plugins (unicode_case.h). */
#include <utf8proc.h>

#include "unicode_case.h"

/* Case_Ignorable (DerivedCoreProperties): Mn, Me, Cf, Lm, Sk, and the Word_Break
 * classes MidLetter, MidNumLet and Single_Quote. */
static bool case_ignorable(uint32_t c) {
  switch (utf8proc_category((utf8proc_int32_t)c)) {
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_SK: return true;
  default: break;
  }
  switch (c) {
  case 0x0027: case 0x002E: case 0x003A: case 0x00B7: case 0x0387: case 0x055F:
  case 0x05F4: case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xFE13:
  case 0xFE52: case 0xFE55: case 0xFF07: case 0xFF0E: case 0xFF1A: return true;
  default: return false;
  }
}

/* Cased: Lu, Ll, Lt, plus Other_Lowercase / Other_Uppercase letters that are not
 * already case-ignorable modifiers (those never reach this test, see final_sigma). */
static bool cased(uint32_t c) {
  switch (utf8proc_category((utf8proc_int32_t)c)) {
  case UTF8PROC_CATEGORY_LU:
  case UTF8PROC_CATEGORY_LL:
  case UTF8PROC_CATEGORY_LT: return true;
  default: break;
  }
  return c == 0xAA || c == 0xBA || (c >= 0x2160 && c <= 0x217F) ||
         (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
         (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

/* Python's handle_capital_sigma: U+03A3 lowercases to final U+03C2 when a cased letter
 * precedes it and none follows it, skipping case-ignorable code points both ways. */
bool unicase_final_sigma(const uint32_t *s, size_t n, size_t i) {
  size_t j = i;
  while (j > 0 && case_ignorable(s[j - 1])) j--;
  if (j == 0 || !cased(s[j - 1])) return false;
  for (j = i + 1; j < n && case_ignorable(s[j]); j++) {}
  return j == n || !cased(s[j]);
}
