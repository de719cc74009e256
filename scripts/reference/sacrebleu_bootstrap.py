#!/usr/bin/env python3
"""sacreBLEU's paired bootstrap on the fixtures in tests/data/bootstrap, written to
tests/data/bootstrap/sacrebleu.txt for tests/test_bleu.c (the tests never run Python).

Needs sacreBLEU 2.3.1 and NumPy; Debian 12 has NumPy 1.24 but no sacreBLEU, so run it
against a source tree of the release (pure Python; its imports come from Debian's
python3-regex, python3-tabulate, python3-portalocker, python3-lxml, python3-colorama):

    git clone --branch v2.3.1 https://github.com/mjpost/sacrebleu /tmp/sacrebleu
    PYTHONPATH=/tmp/sacrebleu /usr/bin/python3 scripts/reference/sacrebleu_bootstrap.py

One line per (case, seed, samples), as `sacrebleu REF -i A B --paired-bs
--paired-bs-n SAMPLES` with SACREBLEU_SEED=SEED computes them (A is the baseline):
case seed samples A.score A.mean A.ci B.score B.mean B.ci p, floats as Python's repr.
"""
import os
import sys

import numpy
import sacrebleu
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tests', 'data',
                    'bootstrap')
CASES = ['hand', 'real']
# Seed 0 is not used: sacreBLEU then leaves the test's generator unseeded (`if self._seed`).
RUNS = [(12345, 1000), (7, 200), (2 ** 40 + 5, 50), (1, 1)]


def lines(name):
    with open(os.path.join(HERE, name), encoding='utf-8') as f:
        return [line.rstrip('\n') for line in f]


def main():
    out = ['# sacreBLEU %s, NumPy %s: scripts/reference/sacrebleu_bootstrap.py'
           % (sacrebleu.__version__, numpy.__version__),
           '# case seed samples A.score A.mean A.ci B.score B.mean B.ci p']
    for case in CASES:
        ref = lines(case + '-ref.txt')
        hyp_a, hyp_b = lines(case + '-a.txt'), lines(case + '-b.txt')
        for seed, samples in RUNS:
            os.environ['SACREBLEU_SEED'] = str(seed)
            test = PairedTest([('A', hyp_a), ('B', hyp_b)], {'BLEU': BLEU()}, [ref],
                              test_type='bs', n_samples=samples)
            _, scores = test()
            res_a, res_b = scores['BLEU']
            out.append(' '.join([case, str(seed), str(samples)] + [repr(float(v)) for v in (
                res_a.score, res_a.mean, res_a.ci, res_b.score, res_b.mean, res_b.ci,
                res_b.p_value)]))
    with open(os.path.join(HERE, 'sacrebleu.txt'), 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')
    print('\n'.join(out))


if __name__ == '__main__':
    sys.exit(main())
