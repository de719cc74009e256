#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_phases.h"

/* Loads order plugin `name` and creates it with settings group g (may be NULL). */
static enum intrus_status open_policy(const struct intrus_plugin_search *search,
                                      const intrus_cfg *g, const char *name,
                                      struct intrus_plugin **plugin, struct ins_train_spec *spec,
                                      struct intrus_error *err) {
  enum intrus_status st = intrus_plugin_load(search, INTRUS_KIND_ORDER, name, plugin, err);
  if (st) {
    if (g) {
      char msg[INTRUS_ERROR_MSG_MAX];
      snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
      intrus_cfg_error(g, "plugin", err, "%s", msg);
      if (err) err->status = st;
    }
    return st;
  }
  spec->order = intrus_plugin_descriptor(*plugin)->vtable;
  return spec->order->create(g, &spec->order_self, err);
}

enum intrus_status train_phases_read(const intrus_cfg *train,
                                     const struct intrus_plugin_search *search,
                                     struct train_phases *out, struct intrus_error *err) {
  memset(out, 0, sizeof *out);
  int n;
  enum intrus_status st;
  if ((st = intrus_cfg_list_len(train, "phases", &n, err))) return st;
  if (n < 1) return intrus_cfg_error(train, "phases", err, "lists no phase");
  if (!(out->phase = calloc((size_t)n, sizeof *out->phase)))
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  static const char *const losses[] = {"main", "uniform", "chosen", NULL};
  static const char *const states[] = {"all", "one", "some", NULL};
  static const char *const untils[] = {"steps", "plateau", NULL};
  static const char *const weights[] = {"state", "length", NULL};
  for (int i = 0; i < n; i++) {
    struct train_phase *p = &out->phase[i];
    const intrus_cfg *g, *og;
    const char *plugin;
    long long steps, patience, per_sentence = 1, warmup = 0;
    double lr = 0.0, late_bias = 0.0;
    int loss, which, until, weight;
    char defname[32];
    snprintf(defname, sizeof defname, "phase%d", i + 1);
    out->count = i + 1;
    if ((st = intrus_cfg_list_group(train, "phases", i, &g, err)) ||
        (st = intrus_cfg_string(g, "name", defname, &p->name, err)) ||
        (st = intrus_cfg_group_req(g, "order", &og, err)) ||
        (st = intrus_cfg_string_req(og, "plugin", &plugin, err)) ||
        (st = open_policy(search, og, plugin, &p->plugin, &p->spec, err)) ||
        (st = intrus_cfg_check_unknown(og, err)) ||
        (st = intrus_cfg_choice(g, "loss", "main", losses, &loss, err)) ||
        (st = intrus_cfg_choice(g, "states", "all", states, &which, err)) ||
        (st = intrus_cfg_choice(g, "weight", "state", weights, &weight, err)) ||
        (st = intrus_cfg_int_req(g, "steps", &steps, err)) ||
        (steps < 1 && (st = intrus_cfg_error(g, "steps", err, "must be at least 1, got %lld",
                                             steps))) ||
        (st = intrus_cfg_choice(g, "until", "steps", untils, &until, err)) ||
        (st = intrus_cfg_int_range(g, "patience", 3, 1, 1 << 20, &patience, err)) ||
        (st = intrus_cfg_bool(g, "restart_optimizer", false, &p->restart_optimizer, err)) ||
        (which == 2 &&
         (st = intrus_cfg_int_range(g, "per_sentence", 4, 1, 1 << 20, &per_sentence, err))) ||
        ((p->has_lr = intrus_cfg_has(g, "lr")) &&
         (st = intrus_cfg_double_range(g, "lr", 0.0, 0.0, 10.0, &lr, err))) ||
        ((p->has_warmup = intrus_cfg_has(g, "warmup")) &&
         (st = intrus_cfg_int_range(g, "warmup", 0, 0, 1LL << 40, &warmup, err))) ||
        (which != 2 && intrus_cfg_has(g, "per_sentence") &&
         (st = intrus_cfg_error(g, "per_sentence", err,
                                "applies to states = \"some\" only"))) ||
        (st = intrus_cfg_bool(g, "finish_state", false, &p->spec.finish_state, err)) ||
        (st = intrus_cfg_double_range(g, "late_bias", 0.0, 0.0, 8.0, &late_bias, err)) ||
        (which == 0 && late_bias > 0.0 &&
         (st = intrus_cfg_error(g, "late_bias", err,
                                "applies to states = \"one\" or \"some\" (\"all\" trains "
                                "every state)"))) ||
        (which == 0 && p->spec.finish_state &&
         (st = intrus_cfg_error(g, "finish_state", err,
                                "applies to states = \"one\" or \"some\" (\"all\" trains "
                                "the complete state already)"))) ||
        (st = intrus_cfg_check_unknown(g, err))) {
      train_phases_free(out);
      return st;
    }
    p->lr = lr;
    p->warmup = (long)warmup;
    p->spec.per_sentence = which == 2 ? (int)per_sentence : 1;
    /* One pair per state makes the main and uniform losses the same -log p(i, c). */
    p->spec.loss = loss == 1 ? INTRUS_INS_LOSS_UNIFORM : INTRUS_INS_LOSS_MAIN;
    p->spec.chosen = loss == 2;
    p->spec.all_states = which == 0;
    p->spec.length_weight = weight == 1;
    p->spec.late_bias = (float)late_bias;
    p->steps = steps;
    p->plateau = until == 1;
    p->patience = (int)patience;
    out->total_steps += steps;
  }
  if ((st = open_policy(search, NULL, "uniform", &out->valid_plugin, &out->valid, err))) {
    train_phases_free(out);
    return st;
  }
  out->valid.loss = INTRUS_INS_LOSS_MAIN;
  out->valid.all_states = true;
  return INTRUS_OK;
}

void train_phases_free(struct train_phases *p) {
  for (int i = 0; i < p->count; i++) {
    if (p->phase[i].spec.order_self) p->phase[i].spec.order->destroy(p->phase[i].spec.order_self);
    if (p->phase[i].plugin) intrus_plugin_close(p->phase[i].plugin);
  }
  if (p->valid.order_self) p->valid.order->destroy(p->valid.order_self);
  if (p->valid_plugin) intrus_plugin_close(p->valid_plugin);
  free(p->phase);
  memset(p, 0, sizeof *p);
}
