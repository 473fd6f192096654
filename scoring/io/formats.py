"""What rules §5 fixes for every contest file: headers, size and row limits, the bytes a number may hold."""
from __future__ import annotations

import numpy as np

#: Default limit on a file's uncompressed size, in bytes (rules §5).
DEFAULT_MAX_BYTES = 200 * 1024 * 1024

TRACES_HEADER = "user_id,time_id,reg_id"
ANOTRACES_HEADER = "reg_id"
PUBTRACES_HEADER = "pse_id,time_id,reg_id"
PTABLE_HEADER = "pse_id,user_id"
ETABLE_HEADER = "user_id"
ETRACES_HEADER = "reg_id"

#: Most rows a file may have (about 3x a 2019 final-round original + reference
#: file): bounds memory and time on a file of millions of empty lines.
MAX_ROWS = 5_000_000

#: Most region ids the distinct generalized sets of one file may name in all, each distinct set counted
#: once however often it appears (a worker's memory for any file the size cap admits). Scoring
#: holds about 22 bytes for each (the parsed members, the interned table, the analyses' sparse weights):
#: with MAX_ROWS rows a scoring job stays under 1.5 GB. A 200 MB file of distinct random sets can name
#: about 70 million; a generalization names a few thousand (a few hundred distinct sets), far below.
MAX_SET_MEMBERS = 40_000_000

#: Bytes read or decompressed per step, so a size limit is checked while data streams.
CHUNK = 1 << 20
#: Most digits a number may have (rules §5 is silent; 9 digits fit every id and keep int64 exact).
MAX_DIGITS = 9
#: UTF-8 byte-order mark, skipped at the start of a file.
BOM = b"\xef\xbb\xbf"

# Byte classes for the fast paths.
DIGIT = np.zeros(256, dtype=bool)
DIGIT[ord("0"):ord("9") + 1] = True
NUMERIC_OK = DIGIT.copy()
NUMERIC_OK[[ord(","), ord("\n")]] = True
# One-column files (etable, etraces): a comma is not a separator there, so it
# must not pass the byte check (it would be parsed as a digit).
NUMERIC_1COL_OK = DIGIT.copy()
NUMERIC_1COL_OK[ord("\n")] = True
