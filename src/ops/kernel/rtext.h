/* cutune — what the rules' text rewrites share (internal; src/ops/kernel/rtext.c): a source split into tokens (CUDA
 * C++ or Python), and edits (replacements of byte ranges) applied back into a new source. */
#ifndef CUTUNE_KERNEL_RTEXT_H
#define CUTUNE_KERNEL_RTEXT_H

#include "cutune/mcgs.h"

typedef enum { CUT_TK_IDENT, CUT_TK_NUM, CUT_TK_PUNCT, CUT_TK_STR } cut_tk_kind;
typedef struct cut_tok {
    cut_tk_kind kind;
    int start, end; /* byte offsets into the source */
    int bol;        /* Python: the first token of a logical line (a statement's start) */
} cut_tok;
typedef struct cut_toks {
    int n, cap;
    cut_tok *t; /* malloc'd: free(ts.t) */
    const char *src;
} cut_toks;

/* CUDA C++: identifiers, numbers and punctuation; blanks, comments, string and character literals and preprocessor
 * lines skipped. Two-character operators ("->", "==", "<<", ">>", "+=", ...) are one token. */
void cut_tk_c(const char *src, cut_toks *ts);
/* Python: identifiers, numbers, punctuation and strings (one CUT_TK_STR token each, prefixes and triple quotes
 * included); blanks, `#` comments and the tunables header (the lines from CUT_KST_PY_BEGIN to CUT_KST_PY_END) skipped.
 * Multi-character operators ("**", "//", "==", "+=", "->", ...) are one token; bol marks statement starts (a newline
 * inside brackets or after a backslash does not start one). */
void cut_tk_py(const char *src, cut_toks *ts);

/* Whether token i exists and its text is s. */
int cut_tk_is(const cut_toks *ts, int i, const char *s);
/* Index of the token closing the bracket at i ("(", "[", "{"), or -1. */
int cut_tk_match(const cut_toks *ts, int i);
/* Whether tokens a and b have the same text. */
int cut_tk_same(const cut_toks *ts, int a, int b);

/* The source text of tokens [a, b] (inclusive), as "%.*s" arguments. */
#define CUT_TK_SPAN(ts, a, b) (ts)->t[b].end - (ts)->t[a].start, (ts)->src + (ts)->t[a].start

typedef struct cut_edit {
    int start, end;
    int seq;    /* the order added */
    char *text; /* owned */
} cut_edit;
typedef struct cut_edits {
    int n, cap;
    cut_edit *e;
} cut_edits;

/* Adds the replacement of bytes [start, end) by the formatted text (start == end: an insertion). */
void cut_ed_add(cut_edits *es, int start, int end, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Applies the edits to src (of two that overlap, the one starting first wins), malloc'd; NULL when there are none.
 * Frees the edits either way. */
char *cut_ed_apply(const char *src, cut_edits *es);

/* ---- the Triton rules' proposals (rules_triton.c) ---- */

/* Takes a rewritten source (owned; NULL: the rule found nothing) as a proposal of move m; bonus is added to the
 * generator's gain for the move. 0, or -1 on an error of the generator (the proposing stops). */
typedef int (*cut_rule_emit)(void *ctx, cut_move m, const char *label, double bonus, char *new_src);
/* Every Triton rewrite of src through emit, in the order of their expected gains. 0, or -1 when emit failed. */
int cut_rules_triton_propose(const char *src, cut_rule_emit emit, void *ctx);

#endif
