#!/usr/bin/env bash
# configs/cifar10-vit.yaml (issue 51, item 4) loads and trains. `dltrain info` counts the
# learnables its PyTorch twin (scripts/bench/pytorch_vit.py) counts for the same layers,
# 2,693,578 (patch 9,408, class token 192, positions 65 x 192, 6 blocks of 444,864, final norm
# 384, head 1,930), with the formats of a ViT: images into patchEmbedding, 65 tokens of 192
# channels (SCB) through the blocks, one vector (CB) from indexing1d. Then 3 epochs on a small
# shapes set (the head set to its 4 classes, the config's adamw, schedule list and
# augmentation) run every iteration at the config's warmup rate and lower the mean loss.
source "$(dirname "$0")/common.sh" "$@"
cfg="$SRC/configs/cifar10-vit.yaml"

"$DLTRAIN" info "$cfg" > "$TMP/info.txt" || fail "configs/cifar10-vit.yaml does not load"
"$DLTRAIN" info "$cfg" --json > "$TMP/info.json"
n=$(json_number "$TMP/info.json" total_learnables)
[[ "$n" == 2693578 ]] || fail "total_learnables is $n, pytorch_vit.py's twin has 2693578"
row() { grep -E "^[0-9]+ +$1 " "$TMP/info.txt" | tr -s ' '; }
[[ "$(row patch)" == "2 patch patchEmbedding 64x192 SCB 9408" ]] || fail "patch row: $(row patch)"
[[ "$(row pos)" == "4 pos positionEmbedding 65x192 SCB 12480" ]] || fail "pos row: $(row pos)"
[[ "$(row b6_attn)" == "47 b6_attn selfAttention 65x192 SCB 148224" ]] || fail "b6_attn row: $(row b6_attn)"
[[ "$(row b6_fc1)" == "50 b6_fc1 fullyConnected 65x768 SCB 148224" ]] || fail "b6_fc1 row: $(row b6_fc1)"
[[ "$(row token)" == "55 token indexing1d 192 CB 0" ]] || fail "token row: $(row token)"
echo "ok: info: 2693578 learnables, tokens 65x192 SCB, the class token 192 CB"

"$DLTRAIN" make-dataset shapes "$TMP/data" --classes 4 --per-class 40 --seed 3 > /dev/null
"$DLTRAIN" train "$cfg" --quiet --threads 2 --output-dir "$TMP/run" --set data.train="$TMP/data/train" \
  --set data.validation="$TMP/data/test" --set layers.head.OutputSize=4 --set training.MaxEpochs=3 \
  --set training.MiniBatchSize=32 --set training.Plots=none > "$TMP/train.log" 2>&1 ||
  { cat "$TMP/train.log" >&2; fail "training configs/cifar10-vit.yaml failed"; }
grep -q '"status":"completed"' "$TMP/run/summary.json" || fail "summary.json: $(cat "$TMP/run/summary.json")"
[[ "$(json_number "$TMP/run/summary.json" iterations)" == 12 ]] || fail "expected 3 epochs x 4 iterations of 32"
# base_learning_rate of iteration k: 1e-3 x (0.1 + 0.9 (k - 1) / 1950) (warmupLearnRate, NumSteps 1950);
# the mean minibatch loss of epoch 3 below epoch 1's.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { k = $col["iteration"]; want = 1e-3 * (0.1 + 0.9 * (k - 1) / 1950); lr = $col["base_learning_rate"]
    if ((lr - want) / want > 1e-5 || (want - lr) / want > 1e-5) { print "iteration " k ": rate " lr ", expected " want; bad = 1 }
    loss[$col["epoch"]] += $col["minibatch_loss"]; count[$col["epoch"]]++ }
  END { first = loss[1] / count[1]; last = loss[3] / count[3]
    printf "mean loss epoch 1 %.4f, epoch 3 %.4f\n", first, last
    if (!(last < first)) { print "the loss did not go down"; bad = 1 }
    exit bad }' "$TMP/run/log.csv" > "$TMP/check.txt" || fail "$(cat "$TMP/check.txt")"
echo "ok: 12 iterations at the warmup's rates; $(tail -1 "$TMP/check.txt")"
