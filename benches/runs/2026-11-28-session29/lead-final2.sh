#!/bin/bash
# Session 29: the whole array suite on the final code (c5fadc8's code), no self-tests (their
# binary is unchanged since the final suite call).
ROOT=$PWD; P=$PWD/fin2-pack
xz -d -T8 $P/kiln-tests.xz && chmod +x $P/kiln-tests
KILN_DEVICE=cuda:0 KILN_REPO=$ROOT KILN_DATA=$P/data timeout 255 $P/kiln-tests --skip examples:: > $OUT/suite.txt 2>&1; echo "rc $?" >> $OUT/suite.txt
grep -E "^test result|FAILED|panicked|^rc" $OUT/suite.txt | head -20
