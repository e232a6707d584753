// Scripted Whisper decoder steps for the simulator. A program function whose inputs include
// `input_ids` (u32, one token per row) and `position` (u32 per row) and whose output
// `logits` (f32) ends in a Whisper vocabulary (n_vocab >= 51864) is a decoder step: the
// simulator keeps the token sequence fed so far (its "KV cache"), and from each
// <|startoftranscript|> on it writes logits that favour one token per step. Which tokens
// comes from the script named by TTB_SIM_SCRIPT (read when the program is loaded), or,
// without a script, from a hash of the encoder states, so that an unscripted decode is
// deterministic, sensible and terminates. A batched step (input_ids and position of B
// tokens, logits of B rows) runs B independent rows, each with its own sequence and decode;
// position 0xFFFFFFFF marks a padding row. See README.md, "Scripted Whisper decoding".

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/ttbridge.h"

#define SCRIPT_MAX_BYTES (1 << 20)
#define SCRIPT_CTX 448                /* n_text_ctx of every Whisper model */
#define SCRIPT_DEFAULT_LOGPROB -0.05  /* log probability of a favoured token */
#define SCRIPT_DEFAULT_NOSPEECH 0.01  /* P(<|nospeech|>) at the <|startoftranscript|> position */
#define SCRIPT_MIN_VOCAB 51864        /* English-only Whisper vocabulary */
#define SCRIPT_MAX_ROWS 32            /* rows of a batched decoder step */
#define SCRIPT_PAD 0xFFFFFFFFu        /* position of a padding row: no step, zero logits */

/* The line splitter of ttb_sim.c's manifest parser. */
int ttb_sim_next_line(char **cursor, int *line, char **key, char **rest);

/* One buffer of a program run, as ttb_sim.c hands it over. */
typedef struct {
  const ttb_tensor_desc *desc;
  void *data;
  size_t bytes;
} ttb_sim_buf;

typedef struct {
  int32_t *ids;
  double *lp; /* per-token log probability; NAN = the decode's default */
  uint32_t n;
  int set;
} id_list;

typedef struct {
  int line;
  id_list expect, prompt, emit;
  double nospeech, logprob;
} script_decode;

/* One row of a (batched) decoder step: its sequence, tokens by position, and the decode
 * that began at its last SOT. */
typedef struct {
  uint32_t hist[SCRIPT_CTX], len;
  int32_t sot_pos;      /* position of the last <|startoftranscript|>, -1 = none */
  int32_t cur;          /* index into dec of the decode in progress; -1 = unscripted */
  script_decode dflt;   /* the unscripted decode in progress */
  int32_t dflt_ids[16];
} script_row;

typedef struct ttb_sim_script {
  char path[256];
  script_decode *dec;
  uint32_t n_dec, cap_dec, next; /* next: the decode the next row to begin one takes */
  uint64_t decodes;              /* decodes begun, over all rows */
  script_row rows[SCRIPT_MAX_ROWS];
} ttb_sim_script;

ttb_status ttb_sim_script_open(ttb_sim_script **out);
void ttb_sim_script_free(ttb_sim_script *s);
ttb_status ttb_sim_script_apply(ttb_sim_script *s, const ttb_sim_buf *in, uint32_t n_in, const ttb_sim_buf *out, uint32_t n_out, int *handled);

static void list_free(id_list *l) {
  free(l->ids);
  free(l->lp);
  memset(l, 0, sizeof *l);
}

void ttb_sim_script_free(ttb_sim_script *s) {
  if (s == NULL) return;
  for (uint32_t i = 0; i < s->n_dec; i++) {
    list_free(&s->dec[i].expect);
    list_free(&s->dec[i].prompt);
    list_free(&s->dec[i].emit);
  }
  free(s->dec);
  free(s);
}

/* parse_ids reads "ID ID:LOGPROB ..." into l (log probabilities only when allow_lp). */
static ttb_status parse_ids(const char *path, int line, char *rest, id_list *l, int allow_lp) {
  if (l->set) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: repeated keyword in one decode", path, line);
  l->set = 1;
  size_t cap = strlen(rest) / 2 + 1;
  l->ids = calloc(cap, sizeof *l->ids);
  l->lp = calloc(cap, sizeof *l->lp);
  if (l->ids == NULL || l->lp == NULL) return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
  char *save = NULL;
  for (char *tok = strtok_r(rest, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save)) {
    char *end;
    errno = 0;
    long v = strtol(tok, &end, 10);
    if (errno || end == tok || v < 0 || v > 1000000) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad token id \"%s\"", path, line, tok);
    double lp = NAN;
    if (*end == ':') {
      if (!allow_lp) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: a log probability is only allowed after emit tokens", path, line);
      char *e2;
      lp = strtod(end + 1, &e2);
      if (e2 == end + 1 || *e2 || !(lp < 0) || isinf(lp)) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad log probability in \"%s\" (want a number below 0)", path, line, tok);
    } else if (*end) {
      return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad token id \"%s\"", path, line, tok);
    }
    l->ids[l->n] = (int32_t)v;
    l->lp[l->n] = lp;
    l->n++;
  }
  return TTB_OK;
}

static ttb_status parse_script(const char *path, char *text, ttb_sim_script *s) {
  int line = 0, header = 0;
  script_decode *d = NULL;
  char *cursor = text, *l, *rest;
  while (ttb_sim_next_line(&cursor, &line, &l, &rest)) {
    if (!header) {
      if (strcmp(l, "ttb-sim-script") != 0 || strcmp(rest, "1") != 0)
        return ttb_fail(TTB_INVALID_ARGUMENT, "%s: first line must be \"ttb-sim-script 1\"", path);
      header = 1;
    } else if (strcmp(l, "decode") == 0) {
      if (*rest) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: \"decode\" takes no arguments", path, line);
      if (s->n_dec == s->cap_dec) {
        uint32_t nc = s->cap_dec ? s->cap_dec * 2 : 8;
        script_decode *nd = realloc(s->dec, nc * sizeof *nd);
        if (nd == NULL) return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
        s->dec = nd;
        s->cap_dec = nc;
      }
      d = &s->dec[s->n_dec++];
      memset(d, 0, sizeof *d);
      d->line = line;
      d->nospeech = SCRIPT_DEFAULT_NOSPEECH;
      d->logprob = SCRIPT_DEFAULT_LOGPROB;
    } else if (d == NULL) {
      return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: \"%s\" before the first \"decode\"", path, line, l);
    } else if (strcmp(l, "expect") == 0 || strcmp(l, "prompt") == 0 || strcmp(l, "emit") == 0) {
      id_list *dst = l[0] == 'e' ? (l[1] == 'x' ? &d->expect : &d->emit) : &d->prompt;
      ttb_status st = parse_ids(path, line, rest, dst, dst == &d->emit);
      if (st) return st;
      if (dst == &d->expect && dst->n == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: \"expect\" needs at least the <|startoftranscript|> id", path, line);
    } else if (strcmp(l, "nospeech") == 0 || strcmp(l, "logprob") == 0) {
      char *end;
      double v = strtod(rest, &end);
      int ok = *rest && !*end && (l[0] == 'n' ? (v >= 0 && v < 1) : (v < 0 && !isinf(v)));
      if (!ok) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad %s \"%s\" (%s)", path, line, l, rest, l[0] == 'n' ? "want a probability in [0, 1)" : "want a number below 0");
      *(l[0] == 'n' ? &d->nospeech : &d->logprob) = v;
    } else {
      return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: unknown keyword \"%s\"", path, line, l);
    }
  }
  if (!header) return ttb_fail(TTB_INVALID_ARGUMENT, "%s: empty script", path);
  return TTB_OK;
}

/* ttb_sim_script_open makes the decoder state of a program being loaded, with the decodes of
 * the file named by TTB_SIM_SCRIPT when it is set and not empty. */
ttb_status ttb_sim_script_open(ttb_sim_script **out) {
  *out = NULL;
  ttb_sim_script *s = calloc(1, sizeof *s);
  if (s == NULL) return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
  for (uint32_t r = 0; r < SCRIPT_MAX_ROWS; r++) {
    s->rows[r].sot_pos = -1;
    s->rows[r].cur = -1;
  }
  const char *path = getenv("TTB_SIM_SCRIPT");
  if (path != NULL && *path) {
    snprintf(s->path, sizeof s->path, "%s", path);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
      ttb_sim_script_free(s);
      return ttb_fail(errno == ENOENT ? TTB_NOT_FOUND : TTB_INVALID_ARGUMENT, "TTB_SIM_SCRIPT: open %s: %s", path, strerror(errno));
    }
    char *text = malloc(SCRIPT_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, SCRIPT_MAX_BYTES + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    ttb_status st = TTB_OK;
    if (text == NULL) st = ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
    else if (rerr || n > SCRIPT_MAX_BYTES) st = ttb_fail(TTB_INVALID_ARGUMENT, "TTB_SIM_SCRIPT %s: %s", path, rerr ? "read error" : "larger than 1 MiB");
    else {
      text[n] = 0;
      st = parse_script(path, text, s);
    }
    free(text);
    if (st) {
      ttb_sim_script_free(s);
      return st;
    }
  }
  *out = s;
  return TTB_OK;
}

/* Vocabulary ids, derived from n_vocab as whisper's tokenizer lays them out. */
typedef struct {
  uint32_t n, eot, sot, sot_prev, nospeech, ts_begin;
} vocab;

static vocab vocab_of(uint32_t n) {
  vocab v;
  v.n = n;
  v.eot = n >= 51865 ? 50257 : 50256; /* multilingual.tiktoken has 50257 ranks, gpt2 50256 */
  v.sot = v.eot + 1;
  v.ts_begin = n - 1501;
  v.nospeech = v.ts_begin - 2;
  v.sot_prev = v.ts_begin - 3;
  return v;
}

static const ttb_sim_buf *find(const ttb_sim_buf *b, uint32_t n, const char *name, uint32_t dtype) {
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(b[i].desc->name, name) == 0 && b[i].desc->dtype == dtype && b[i].data != NULL) return &b[i];
  return NULL;
}

/* The unscripted decode: " This is simulated speech number N." between <|0.00|> and <|2.00|>,
 * N (one..twelve) from a hash of the encoder states. */
static void default_decode(script_row *s, vocab v, uint64_t h) {
  static const int32_t multi[] = {639, 307, 41713, 6218, 1230}, multi_n[] = {472, 732, 1045, 1451, 1732, 2309, 3407, 3180, 4949, 2064, 21090, 14390};
  static const int32_t en[] = {770, 318, 28590, 4046, 1271}, en_n[] = {530, 734, 1115, 1440, 1936, 2237, 3598, 3624, 5193, 3478, 22216, 14104};
  const int32_t *w = v.n >= 51865 ? multi : en, *num = v.n >= 51865 ? multi_n : en_n;
  uint32_t k = 0;
  s->dflt_ids[k++] = (int32_t)v.ts_begin;
  for (int i = 0; i < 5; i++) s->dflt_ids[k++] = w[i];
  s->dflt_ids[k++] = num[h % 12];
  s->dflt_ids[k++] = 13; /* "." in both vocabularies */
  s->dflt_ids[k++] = (int32_t)(v.ts_begin + 100);
  memset(&s->dflt, 0, sizeof s->dflt);
  s->dflt.emit.ids = s->dflt_ids;
  s->dflt.emit.n = k;
  s->dflt.nospeech = SCRIPT_DEFAULT_NOSPEECH;
  s->dflt.logprob = SCRIPT_DEFAULT_LOGPROB;
}

static uint64_t hash_bytes(const void *p, size_t n) {
  const uint8_t *b = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

static ttb_status mismatch(const ttb_sim_script *s, const script_decode *d, const char *what, uint32_t at, uint32_t got, int32_t want) {
  return ttb_fail(TTB_INVALID_ARGUMENT, "TTB_SIM_SCRIPT %s:%d (decode %llu): %s token %u is %u, the script expects %d",
                  s->path, d->line, (unsigned long long)s->decodes, what, at, got, want);
}

/* row_hash hashes what row r of a B-row step reads besides its token and position: with B
 * such inputs (one encoder state per row) the r-th, else all of them. */
static uint64_t row_hash(const ttb_sim_buf *in, uint32_t n_in, uint32_t r, uint32_t B) {
  uint32_t n_other = 0;
  for (uint32_t i = 0; i < n_in; i++)
    if (strcmp(in[i].desc->name, "input_ids") != 0 && strcmp(in[i].desc->name, "position") != 0 && in[i].data != NULL) n_other++;
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n_in; i++)
    if (strcmp(in[i].desc->name, "input_ids") != 0 && strcmp(in[i].desc->name, "position") != 0 && in[i].data != NULL) {
      if (B == 1 || n_other != B || k == r) h ^= hash_bytes(in[i].data, in[i].bytes);
      k++;
    }
  return h;
}

/* begin_decode starts the decode of a <|startoftranscript|> fed at position pos. */
static ttb_status begin_decode(ttb_sim_script *s, script_row *row, vocab v, uint32_t pos, uint64_t h) {
  s->decodes++;
  row->sot_pos = (int32_t)pos;
  if (s->path[0] == 0) {
    default_decode(row, v, h);
    row->cur = -1;
    return TTB_OK;
  }
  if (s->next >= s->n_dec)
    return ttb_fail(TTB_INVALID_ARGUMENT, "TTB_SIM_SCRIPT %s: decode %llu begins (<|startoftranscript|> at position %u) but the script has only %u",
                    s->path, (unsigned long long)s->decodes, pos, s->n_dec);
  row->cur = (int32_t)s->next++;
  const script_decode *d = &s->dec[row->cur];
  if (d->prompt.set) {
    /* The tokens before <|startoftranscript|>: <|startofprev|> and the prompt, or nothing. */
    uint32_t want = d->prompt.n ? d->prompt.n + 1 : 0;
    if (pos != want)
      return ttb_fail(TTB_INVALID_ARGUMENT, "TTB_SIM_SCRIPT %s:%d (decode %llu): %u tokens before <|startoftranscript|>, the script expects %u",
                      s->path, d->line, (unsigned long long)s->decodes, pos, want);
    if (want > 0 && row->hist[0] != v.sot_prev) return mismatch(s, d, "prompt", 0, row->hist[0], (int32_t)v.sot_prev);
    for (uint32_t i = 0; i < d->prompt.n; i++)
      if (row->hist[i + 1] != (uint32_t)d->prompt.ids[i]) return mismatch(s, d, "prompt", i + 1, row->hist[i + 1], d->prompt.ids[i]);
  }
  return TTB_OK;
}

static ttb_status row_step(ttb_sim_script *s, script_row *row, vocab v, uint32_t id, uint32_t pos, uint64_t h, float *logits);

/* ttb_sim_script_apply computes a Whisper decoder step's logits (*handled = 1); for any other
 * function it does nothing (*handled = 0) and the simulator fills the outputs. */
ttb_status ttb_sim_script_apply(ttb_sim_script *s, const ttb_sim_buf *in, uint32_t n_in, const ttb_sim_buf *out, uint32_t n_out, int *handled) {
  *handled = 0;
  if (s == NULL || n_out != 1) return TTB_OK;
  const ttb_sim_buf *ids = find(in, n_in, "input_ids", TTB_U32), *posb = find(in, n_in, "position", TTB_U32);
  const ttb_sim_buf *lg = find(out, n_out, "logits", TTB_F32);
  if (ids == NULL || posb == NULL || lg == NULL || ids->bytes != posb->bytes || ids->bytes % 4 != 0) return TTB_OK;
  uint32_t B = (uint32_t)(ids->bytes / 4);
  if (B < 1 || B > SCRIPT_MAX_ROWS) return TTB_OK;
  uint32_t nv = lg->desc->shape[lg->desc->rank - 1];
  if (nv < SCRIPT_MIN_VOCAB || lg->bytes != (size_t)B * nv * 4) return TTB_OK; /* not a Whisper decoder step */
  vocab v = vocab_of(nv);
  *handled = 1;
  memset(lg->data, 0, lg->bytes); /* flat: also what prompt positions (before a SOT) return */
  for (uint32_t r = 0; r < B; r++) {
    uint32_t id, pos;
    memcpy(&id, (const char *)ids->data + 4 * r, 4);
    memcpy(&pos, (const char *)posb->data + 4 * r, 4);
    if (B > 1 && pos == SCRIPT_PAD) continue; /* a padding row */
    ttb_status st = row_step(s, &s->rows[r], v, id, pos, row_hash(in, n_in, r, B), (float *)lg->data + (size_t)r * nv);
    if (st && B > 1) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", ttb_last_error());
      return ttb_fail(st, "row %u: %s", r, msg);
    }
    if (st) return st;
  }
  return TTB_OK;
}

/* row_step feeds id at pos to one row and writes its logits. */
static ttb_status row_step(ttb_sim_script *s, script_row *row, vocab v, uint32_t id, uint32_t pos, uint64_t h, float *logits) {
  uint32_t nv = v.n;
  if (pos >= SCRIPT_CTX) return ttb_fail(TTB_INVALID_ARGUMENT, "decoder step at position %u: beyond n_text_ctx %d", pos, SCRIPT_CTX);
  if (pos > row->len) return ttb_fail(TTB_INVALID_ARGUMENT, "decoder step at position %u after %u tokens: the KV cache has a gap", pos, row->len);
  if (id >= nv) return ttb_fail(TTB_INVALID_ARGUMENT, "decoder step: token %u outside the vocabulary of %u", id, nv);
  row->hist[pos] = id;
  row->len = pos + 1;
  if (row->sot_pos >= (int32_t)pos) { /* the sequence restarted at or before the last SOT */
    row->sot_pos = -1;
    row->cur = -1;
    row->dflt.emit.n = 0;
  }
  if (id == v.sot) {
    ttb_status st = begin_decode(s, row, v, pos, h);
    if (st) return st;
  }
  if (row->sot_pos < 0) return TTB_OK; /* prompt tokens: nobody reads these logits */
  const script_decode *d = row->cur >= 0 ? &s->dec[row->cur] : &row->dflt;
  uint32_t L = pos - (uint32_t)row->sot_pos + 1; /* tokens fed since (and with) the SOT */
  uint32_t P;                                  /* length of the sot sequence */
  if (d->expect.set) {
    for (uint32_t i = 0; i < L && i < d->expect.n; i++) {
      uint32_t got = row->hist[row->sot_pos + (int32_t)i];
      if (got != (uint32_t)d->expect.ids[i]) return mismatch(s, d, "sot sequence", i, got, d->expect.ids[i]);
    }
    P = d->expect.n;
  } else {
    P = 1;
    while (P < L && row->hist[row->sot_pos + (int32_t)P] > v.eot && row->hist[row->sot_pos + (int32_t)P] < v.ts_begin) P++;
  }
  int32_t fav;
  double lp = d->logprob;
  if (L < P && d->expect.set) {
    fav = d->expect.ids[L];
  } else {
    uint32_t k = L >= P ? L - P : 0;
    fav = k < d->emit.n ? d->emit.ids[k] : (int32_t)v.eot;
    if (k < d->emit.n && d->emit.lp && !isnan(d->emit.lp[k])) lp = d->emit.lp[k];
  }
  if (fav < 0 || (uint32_t)fav >= nv)
    return ttb_fail(TTB_INVALID_ARGUMENT, "TTB_SIM_SCRIPT %s:%d: token %d outside the vocabulary of %u", s->path, d->line, fav, nv);
  /* Every token 0 but the favoured one, whose logit gives it probability exp(lp) among all nv:
   * e^F / (e^F + nv - 1) = p. At the SOT position, <|nospeech|> gets probability nospeech. */
  double p = exp(lp), eF = (double)(nv - 1) * p / (1 - p);
  logits[fav] = (float)log(eF);
  if (L == 1 && (uint32_t)fav != v.nospeech) {
    double ns = d->nospeech;
    logits[v.nospeech] = ns > 0 ? (float)log(ns * (eF + (double)(nv - 2)) / (1 - ns)) : -INFINITY;
  }
  return TTB_OK;
}
