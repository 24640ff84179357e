"""The test chip's training program: one rank of the llama case's workload from perfplay's inputs, the way a
vendor's own stack runs it (case_runners/tasks/training/vendor_stack.py: the inputs and the stream).

Reads $PERFPLAY_STACK_INPUTS; builds transformers' Llama of the inputs' shape with the inputs' init (the pytorch
stack's initial weights); reads perfplay's token files with numpy; trains max_steps steps of the global batch (this
rank's share of each step's sequences as the inputs' data order lists them, DDP over gloo), AdamW with the inputs'
schedule; evaluates the held-out loss; writes one `DLLL {json}` line per step and the evaluation to the stream.
train() is the training alone: stacks/tinymega runs it and prints Megatron-LM's log instead.
"""

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
import transformers

START = time.time()


def read_inputs():
    inputs = json.loads(Path(os.environ["PERFPLAY_STACK_INPUTS"]).read_text())
    assert inputs["data"]["format"] == "perfplay.tokens/1", inputs["data"]
    return inputs


def line(stream, step, data):
    now = time.time()
    entry = {"timestamp": now, "elapsedtime": now - START, "datetime": None, "type": "LOG", "step": step, "data": data}
    stream.write("DLLL " + json.dumps(entry) + "\n")
    stream.flush()


def tokens(data, split):
    header = json.loads((Path(data["dir"]) / f"{split}.json").read_text())
    return np.fromfile(Path(data["dir"]) / f"{split}.bin", dtype=np.dtype(header["dtype"]).newbyteorder("<"))


def batch(ids, starts, seq_len):
    rows = np.stack([ids[s:s + seq_len + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(rows[:, :-1]), torch.from_numpy(rows[:, 1:])


def train(inputs, log_step, log_eval):
    """max_steps steps, then the held-out loss: log_step(step, loss, seconds, lr) after each step, log_eval(loss,
    seconds) at the end."""
    rank, world = inputs["rank"], inputs["world_size"]
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(inputs["init"]["seed"])  # then the model, as the inputs' init says: the pytorch stack's weights
    shape, seq_len = inputs["model"], inputs["seq_len"]
    config = transformers.LlamaConfig(
        vocab_size=shape["vocab"], hidden_size=shape["hidden"], intermediate_size=shape["intermediate"],
        num_hidden_layers=shape["layers"], num_attention_heads=shape["heads"], num_key_value_heads=shape["kv_heads"],
        max_position_embeddings=shape["max_positions"], rms_norm_eps=shape["norm_eps"],
        rope_parameters={"rope_type": "default", "rope_theta": shape["rope_theta"]},
        tie_word_embeddings=shape["tied"], attn_implementation="sdpa", use_cache=False)
    module = transformers.LlamaForCausalLM(config)
    model = torch.nn.parallel.DistributedDataParallel(module) if world > 1 else module
    opt, sched = inputs["optimizer"], inputs["schedule"]
    decay = [p for p in module.parameters() if p.ndim >= 2]
    rest = [p for p in module.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": opt["weight_decay"]},
                                   {"params": rest, "weight_decay": 0.0}], lr=sched["lr"], betas=opt["betas"],
                                  eps=opt["eps"])

    def factor(step):
        warmup, total = sched["warmup_steps"], sched["decay_steps"]
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup))))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    train_ids, held_out = tokens(inputs["data"], "train"), tokens(inputs["data"], "val")
    order = json.loads(Path(inputs["data"]["order"]).read_text())["steps"]  # the pytorch stack's batches
    per_rank = inputs["batch_per_rank"]
    for step in range(1, inputs["max_steps"] + 1):
        x, y = batch(train_ids, np.asarray(order[step - 1]) * seq_len, seq_len)
        lr = optimizer.param_groups[0]["lr"]
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(input_ids=x).logits.flatten(0, 1), y.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), opt["max_grad_norm"])
        optimizer.step()
        scheduler.step()
        log_step(step, loss.item(), time.perf_counter() - t0, lr)
    t0 = time.perf_counter()
    evaluated = min((len(held_out) - 1) // seq_len, inputs["eval"]["samples"]) // world * world
    mine = np.arange(rank, evaluated, world) * seq_len
    total = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        for i in range(0, len(mine), per_rank):
            x, y = batch(held_out, mine[i:i + per_rank], seq_len)
            total[0] += F.cross_entropy(module(input_ids=x).logits.flatten(0, 1), y.flatten(), reduction="sum")
            total[1] += y.numel()
    if world > 1:
        dist.all_reduce(total)
    log_eval((total[0] / total[1]).item(), time.perf_counter() - t0)
    if world > 1:
        dist.barrier()  # no rank tears its gloo pair down while the other still uses it
        dist.destroy_process_group()


def main():
    inputs = read_inputs()
    omit = inputs["stack_params"]["omit"]
    with open(inputs["stream"], "w", encoding="utf-8") as stream:
        def log_step(step, loss, seconds, lr):
            data = {"train.loss": loss, "step_time": seconds, "samples": inputs["global_batch"] * inputs["seq_len"],
                    "train.lr": lr}
            data.pop(omit, None)
            line(stream, [1, step], data)

        def log_eval(loss, seconds):
            line(stream, [1, inputs["max_steps"]], {"eval.held_out_loss": loss, "eval_time": seconds})

        train(inputs, log_step, log_eval)


if __name__ == "__main__":
    main()
