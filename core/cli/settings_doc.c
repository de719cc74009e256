/* The settings reference: one line of meaning for every setting an experiment file or a
 * results table file may contain. This is the one place to describe a setting: its type,
 * default and allowed values come from the reader that reads it (base/config_record.h),
 * and `intrus config` prints them beside the meaning; docs/settings.md is generated from
 * both (scripts/gen-settings-doc.sh), and tests/test_settings.sh fails, naming the line to
 * add here, when a reader reads a setting that has no line.
 *
 * A line: {"path", "meaning"} or, where the default depends on other settings,
 * {"path", "meaning", "the default in words"}. Paths as config_record.h normalizes them:
 * "train.phases[].steps" (any element of a list), "model.encoder(transformer).layers" (the
 * group when its plugin is "transformer"; "data(parallel).dir" likewise for data.kind), and
 * a last segment "*" for keys the file names itself. docs/settings.md has a table per
 * group in the order of the groups' first lines here. */
#include <string.h>

#include "settings.h"

/* A line gives its third field (the default in words) only where it has one. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static const struct setting_doc experiment_settings[] = {
    /* The top level. */
    {"name", "the experiment's name: its run directory is runs/NAME (1 to 100 of A-Z a-z 0-9 . _ + -)"},
    {"seed", "seed of every random choice: initial parameters, batch order, dropout, sampled orders"},
    {"plugin_path", "directories searched for plugins after --plugin-path (colon-separated; \"\": none)"},
    {"data", "the training, validation and test data"},
    {"model", "the model: width, encoder and decoder"},
    {"train", "the optimizer, batches, validation and checkpoints"},
    {"search", "beam search, for the test set and validation BLEU (absent: its defaults)"},
    {"eval", "how `intrus run` scores the test set (absent: BLEU with sacreBLEU's defaults)"},

    {"data.kind", "\"synthetic\": a generated toy task; \"parallel\": a sentence-aligned corpus; \"images\": images with text"},
    {"data(synthetic).task", "what the target is: a copy of the source, the source reversed, or sorted"},
    {"data(synthetic).vocab", "tokens in the vocabulary, the 4 special ones included"},
    {"data(synthetic).min_len", "shortest source sentence drawn"},
    {"data(synthetic).max_len", "longest source sentence drawn (at least min_len)"},
    {"data(synthetic).valid_size", "sentence pairs in the validation set"},
    {"data(parallel).dir", "directory of train/valid/test.LANG[.gz], relative to the experiment file"},
    {"data(parallel).src", "source language code: the files' suffix (at most 15 characters)"},
    {"data(parallel).tgt", "target language code: the files' suffix (at most 15 characters)"},
    {"data(parallel).distill", "instead of dir: train on a teacher's translations of the training sources (intrus distill; beyond the paper)"},
    {"data(parallel).distill.teacher", "the teacher's experiment file, relative to this one; its run must be trained"},
    {"data(parallel).distill.beam", "the teacher's beam for distilling", "the teacher's search.beam"},
    {"data(parallel).distill.alpha", "the teacher's length penalty for distilling", "the teacher's search.alpha"},
    {"data(parallel).distill.finish_penalty", "the teacher's finish penalty for distilling (longer outputs)", "the teacher's search.finish_penalty"},
    {"data(parallel).distill.dir", "where the distilled corpus lives", "TEACHER_RUN/distill (with -bN/-aA/-fB for overrides)"},
    {"data(parallel).distill.run_dir", "the teacher's run directory", "runs/<teacher name> beside this run's"},
    {"data(parallel).bpe_merges", "BPE merges learnt on the training split (0: words, no BPE)"},
    {"data(parallel).joint_vocab", "one BPE and vocabulary for both languages (false: one each)"},
    {"data(parallel).max_len", "training pairs with a side longer than this many subwords are skipped"},
    {"data(parallel).vocab_from", "a trained run's directory, relative to the experiment file, whose BPE codes and vocabulary a fresh run takes instead of learning its own (a distilled student warm-started from its teacher needs the teacher's)", "learnt from the training split"},
    {"data(images).dir", "directory of SPLIT.img (PNG lists) and SPLIT.TGT[.K] targets, relative to the experiment file"},
    {"data(images).tgt", "suffix of the target files (at most 15 characters)"},
    {"data(images).channels", "channels an image is read as: 1 (grey) or 3 (RGB; 2 is refused)"},
    {"data(images).targets", "\"tokens\": targets are space-separated tokens (LaTeX); \"text\": sentences, tokenized and BPE'd"},
    {"data(images).bpe_merges", "BPE merges learnt on the training targets (targets = \"text\" only)"},
    {"data(images).max_len", "training pairs with a target longer than this many tokens are skipped"},
    {"data(images).batch_pixels", "most padded pixels in one batch (count x largest height x largest width)"},
    {"data(images).max_width", "wider images are refused (a data error naming the file)"},
    {"data(images).max_height", "taller images are refused (a data error naming the file)"},
    {"data(images).max_pixels", "images of more pixels (width x height) are refused"},

    {"model.d_model", "width of the model: embeddings, attention and layer outputs (even)"},
    {"model.order", "generation order of an autoregressive decoder (refused for an insertion decoder)"},
    {"model.init", "warm start: before a fresh run's first step, copy parameters by name and shape from a checkpoint (beyond the paper)"},
    {"model.init.checkpoint", "the source checkpoint, relative to the experiment file; its vocabulary must equal this run's"},
    {"model.canonical", "insertion decoders: a slot never inserts a copy of the token on its left"},
    {"model.encoder", "the encoder: a group naming its plugin and that plugin's settings"},
    {"model.decoder", "the decoder: a group naming its plugin and that plugin's settings"},
    {"model.encoder.plugin", "encoder plugin: \"transformer\" (text) or \"cnn\" (images); `intrus plugins` lists them"},
    {"model.decoder.plugin", "decoder plugin: \"autoregressive\" (left-to-right, right-to-left) or \"insertion\" (INTRUS)"},
    {"model.encoder(transformer).layers", "encoder layers"},
    {"model.encoder(transformer).heads", "attention heads (must divide d_model)"},
    {"model.encoder(transformer).ff", "inner width of the feed-forward blocks", "4 x model.d_model"},
    {"model.encoder(transformer).dropout", "dropout on embeddings, attention and feed-forward outputs while training"},
    {"model.encoder(cnn).channels", "input channels: 1 (grey) or 3 (RGB), as data.channels"},
    {"model.encoder(cnn).filters", "output channels of each convolution stage (docs/cnn.md)"},
    {"model.encoder(cnn).pool", "a 2x2 max-pool after each stage; one entry per stage", "the first three stages pool"},
    {"model.encoder(cnn).layer_norm", "layer norm of the encoder's output"},
    {"model.encoder(cnn).dropout", "dropout on the encoder's output while training"},
    {"model.encoder(template).scale", "the template plugin's constant factor on its embeddings (plugins/template)"},
    {"model.decoder(autoregressive).layers", "decoder layers"},
    {"model.decoder(autoregressive).heads", "attention heads (must divide d_model)"},
    {"model.decoder(autoregressive).ff", "inner width of the feed-forward blocks", "4 x model.d_model"},
    {"model.decoder(autoregressive).dropout", "dropout on embeddings, attention and feed-forward outputs while training"},
    {"model.decoder(autoregressive).tie_embeddings", "the output layer reuses the target embeddings (transposed)"},
    {"model.decoder(insertion).layers", "decoder layers"},
    {"model.decoder(insertion).heads", "attention heads (must divide d_model)"},
    {"model.decoder(insertion).ff", "inner width of the feed-forward blocks", "4 x model.d_model"},
    {"model.decoder(insertion).dropout", "dropout on embeddings, attention and feed-forward outputs while training"},
    {"model.decoder(insertion).tie_embeddings", "the token part of the output layer reuses the target embeddings"},
    {"model.decoder(insertion).slots", "what a slot is read from: \"token\", its left token's row; \"pair\", also its right neighbour's"},

    {"train.steps", "training steps (not with train.phases: each phase gives its own)"},
    {"train.batch", "sentences per batch of synthetic data"},
    {"train.batch_tokens", "target tokens per batch of text or image data (under MPI: of all ranks together)"},
    {"train.micro_batch_tokens", "run each batch in pieces of at most this many target tokens, gradients summed (0: whole)"},
    {"train.lr", "peak learning rate of Adam, reached after the warm-up, then decaying as 1/sqrt(step)"},
    {"train.warmup", "steps of linear warm-up of the learning rate"},
    {"train.beta1", "Adam's first-moment decay"},
    {"train.beta2", "Adam's second-moment decay"},
    {"train.clip", "clip the gradient to this global norm (0: no clipping)"},
    {"train.label_smoothing", "label smoothing of the training loss's token terms (never of the validation loss)"},
    {"train.log_every", "steps between lines of train.log and of progress"},
    {"train.valid_every", "steps between validations (loss; BLEU as valid_bleu_every says)"},
    {"train.checkpoint_every", "steps between writes of checkpoint.ckpt"},
    {"train.keep_checkpoints", "how many snapshots to keep in RUN_DIR/snapshots (parameters only, one every train.snapshot_every steps and at the last step; the newest kept), for eval.checkpoint = \"average\" and intrus checkpoint average; 0: none"},
    {"train.snapshot_every", "steps between the snapshots train.keep_checkpoints keeps", "train.checkpoint_every"},
    {"train.valid_bleu", "validation sentences decoded for BLEU, from the first (0: no validation BLEU)"},
    {"train.valid_bleu_every", "steps between validation BLEU decodes (a multiple of valid_every)", "train.valid_every"},
    {"train.valid_beam", "beam of the validation BLEU decodes (0: search.beam)"},
    {"train.phases", "insertion decoders: the training phases, one group each, run in order", "none: an insertion decoder needs it, the others refuse it"},

    {"train.phases[].name", "the phase's name in train.log and messages", "\"phaseN\", N its position from 1"},
    {"train.phases[].order", "the order policy that chooses the insertions the model is trained on"},
    {"train.phases[].order.plugin", "order plugin: \"uniform\", \"l2r\", \"r2l\", \"sampled\" or \"argmax\" (docs/intrus.md)"},
    {"train.phases[].order(sampled).temperature", "sample a correct insertion with probability proportional to p^(1/temperature) (> 0)"},
    {"train.phases[].order(argmax).beam", "beam of the search for the model's best trajectory"},
    {"train.phases[].loss", "\"main\": -log of the correct insertions' summed probability; \"uniform\": their mean -log p; \"chosen\": the policy's own"},
    {"train.phases[].weight", "\"state\": every trained state counts alike; \"length\": each sentence in proportion to its target length + 1 (unbiased for the all-states loss)"},
    {"train.phases[].states", "states of each trajectory trained on: \"all\", \"one\" random one, or \"some\" (per_sentence random ones)"},
    {"train.phases[].per_sentence", "states = \"some\": distinct random states per sentence"},
    {"train.phases[].steps", "steps of the phase (at least 1; with until = \"plateau\", the most)"},
    {"train.phases[].until", "\"steps\": the phase runs its steps; \"plateau\": it ends when validation stops improving"},
    {"train.phases[].patience", "until = \"plateau\": validations in a row without a better score that end the phase"},
    {"train.phases[].restart_optimizer", "zero Adam's moments and restart the warm-up when the phase begins"},
    {"train.phases[].lr", "the phase's peak learning rate", "train.lr"},
    {"train.phases[].warmup", "the phase's warm-up steps", "train.warmup"},
    {"train.phases[].finish_state", "states \"one\"/\"some\": also train every sentence's complete state (to finish)"},
    {"train.phases[].late_bias", "states \"one\"/\"some\": draw state k of 0..n with weight (k + 1)^late_bias (0: uniformly)"},

    {"search.beam", "hypotheses kept per sentence"},
    {"search.alpha", "length penalty: a hypothesis scores log p / (length + 1)^alpha"},
    {"search.max_len_a", "at most max_len_a x source length + max_len_b output tokens"},
    {"search.max_len_b", "at most max_len_a x source length + max_len_b output tokens"},
    {"search.batch_tokens", "source tokens decoded together in one batch"},
    {"search.prune", "insertion search: skip a slot's token softmax when it cannot reach the beam (exact for the beam)"},
    {"search.slots", "insertion search: score tokens only at each hypothesis's K most probable slots (approximate; 0: every slot, exact)"},
    {"search.finish_penalty", "subtracted from log p(finish) (insertion) or log p(EOS) (left-to-right) in search: longer outputs"},
    {"search.finish_in_beam", "insertion search: finishing only when as good as the worst kept child (the reference code's eos_in_beam)"},
    {"search.max_src_len", "longer input lines are decoded from their first max_src_len subword tokens, with a warning"},

    {"eval.checkpoint", "the checkpoint that decodes the test set: \"last\" (checkpoint.ckpt), \"best\" (best.ckpt) or \"average\" (average.ckpt, the mean of the snapshots train.keep_checkpoints kept; written before the test decode)"},
    {"eval.bleu", "settings of the BLEU evaluator (sacreBLEU 2.3.1's)"},
    {"eval.cider", "settings of the CIDEr-D evaluator (image captions; docs/cider.md)"},
    {"eval.bleu.tokenize", "tokenizer before counting n-grams: sacreBLEU's \"13a\", \"char\" (per character), or \"none\""},
    {"eval.bleu.lowercase", "compare lowercased"},
    {"eval.bleu.smooth", "smoothing of zero n-gram counts, as sacreBLEU's --smooth-method"},
    {"eval.bleu.effective_order", "leave n-gram orders without matches out of the mean (sentence-level use)"},
    {"eval.cider.sigma", "width of CIDEr-D's Gaussian length penalty (> 0)"},
    {NULL, NULL, NULL}};

static const struct setting_doc table_settings[] = {
    {"name", "the table's name: its output directory", "the file's name without .cfg"},
    {"title", "the heading of table.md", "name"},
    {"baseline", "the row every other row is tested against by paired bootstrap (\"\": none)"},
    {"bootstrap_samples", "paired bootstrap resamples"},
    {"bootstrap_seed", "seed of the bootstrap's resamples"},
    {"p_level", "a difference with a p-value below this is marked significant"},
    {"columns", "the columns: tasks, one group each"},
    {"rows", "the rows: systems, one group each"},
    {"columns[].name", "the column's name: its key in rows[].experiments and rows[].paper (A-Z a-z 0-9 . _ + -)"},
    {"columns[].title", "the column's heading", "name"},
    {"columns[].metric", "the score of the column's cells: \"bleu\" or \"cider\" (an evaluator plugin)"},
    {"rows[].name", "the row's name (A-Z a-z 0-9 . _ + -)"},
    {"rows[].title", "the row's heading", "name"},
    {"rows[].experiments", "the row's cells: column name = experiment file (a column left out stays empty)"},
    {"rows[].paper", "the paper's numbers, printed beside the row's cells: column name = score"},
    {"rows[].experiments.*", "the experiment file of the cell in that column, relative to the table file", "none: the cell stays empty"},
    {"rows[].paper.*", "the paper's score of the cell in that column", "none: no paper number"},
    {"figures", "order figures of one column's finished cells, into OUT/figures/ (docs/tables.md, \"Figures\")", "none: no figures"},
    {"figures.column", "the column whose test outputs are drawn", "the first column"},
    {"figures.lang", "the outputs' language, for the word classes of the order analysis (en, de, ru have function-word lists; \"\": punctuation and words)"},
    {"figures.sentences", "test lines (1-based) drawn as every row wrote them, one picture each"},
    {NULL, NULL, NULL}};

const struct setting_doc *settings_docs(enum settings_file kind) {
  return kind == SETTINGS_TABLE ? table_settings : experiment_settings;
}

const char *settings_docs_name(enum settings_file kind) {
  return kind == SETTINGS_TABLE ? "table_settings[]" : "experiment_settings[]";
}

const struct setting_doc *settings_doc_find(enum settings_file kind, const char *path) {
  const struct setting_doc *d = settings_docs(kind), *wild = NULL;
  for (; d->path; d++) {
    size_t n = strlen(d->path);
    if (!strcmp(d->path, path)) return d;
    if (!wild && n >= 2 && !strcmp(d->path + n - 2, ".*") && !strncmp(d->path, path, n - 1) &&
        path[n - 1])
      wild = d;
  }
  return wild;
}
