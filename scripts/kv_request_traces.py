#!/usr/bin/python3
"""Writes request traces for the KV-cache workflow's chunked mode
(docs/kvcache-chunked.md) in each public format it reads, so that nothing is
downloaded at run time:

  scripts/kv_request_traces.py mooncake OUT.jsonl [--requests N] [--seed S]
  scripts/kv_request_traces.py burstgpt OUT.csv [--requests N] [--seed S]
  scripts/kv_request_traces.py sharegpt OUT.json [--requests N] [--seed S]

mooncake: requests arriving as a Poisson process (--rate per second), each
opening with one of --prompts shared system prompts (--prompt-blocks blocks
of 512 tokens) and, with probability --follow-up, continuing an earlier
conversation (its whole input and output become this request's prefix),
else a new one; hash ids are given as Mooncake's are, one new id per new
512-token block, equal ids for equal prefixes.
burstgpt: BurstGPT's columns, request and response tokens drawn as the
paper's Zipf-like spread, no prefix sharing (the format has none).
sharegpt: conversations of 1 to 4 human turns with generated text of the
drawn lengths (4 bytes per token, as the reader counts).
"""
import argparse
import csv
import json
import random


def mooncake(args, rng):
    block = 512
    next_id = 0
    prompts = []
    for _ in range(args.prompts):
        prompts.append(list(range(next_id, next_id + args.prompt_blocks)))
        next_id += args.prompt_blocks
    conversations = []  # (full block ids, tokens) of earlier requests
    t = 0.0
    rows = []
    for _ in range(args.requests):
        t += rng.expovariate(args.rate)
        new_tokens = rng.randint(64, args.max_new_tokens)
        output = rng.randint(16, 512)
        if conversations and rng.random() < args.follow_up:
            ids, tokens = rng.choice(conversations)
        else:
            ids, tokens = list(rng.choice(prompts)), len(prompts[0]) * block
        total = tokens + new_tokens
        # Full blocks of the prefix keep their ids; the rest are new.
        keep = min(len(ids), tokens // block)
        ids = ids[:keep]
        while len(ids) * block < total:
            ids.append(next_id)
            next_id += 1
        rows.append({"timestamp": int(t * 1000), "input_length": total,
                     "output_length": output, "hash_ids": ids})
        # The conversation so far: the input's full blocks keep their ids;
        # blocks the output completes, and a partial last one, are new.
        conv = ids[:total // block]
        while len(conv) * block < total + output:
            conv.append(next_id)
            next_id += 1
        conversations.append((conv, total + output))
    with open(args.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def burstgpt(args, rng):
    t = 0.0
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens",
                    "Log Type"])
        for _ in range(args.requests):
            t += rng.expovariate(args.rate)
            req = int(min(16000, rng.paretovariate(1.2) * 200))
            resp = int(min(4000, rng.paretovariate(1.5) * 100))
            w.writerow(["%.0f" % t, rng.choice(["ChatGPT", "GPT-4"]), req, resp, req + resp,
                        "Conversation log"])


def sharegpt(args, rng):
    words = "storage cache prefix token chunk tier offload replica latency bandwidth".split()

    def text(tokens):
        out = []
        while len(" ".join(out)) < tokens * 4:
            out.append(rng.choice(words))
        return " ".join(out)[:tokens * 4]

    conversations = []
    made = 0
    while made < args.requests:
        turns = []
        for _ in range(rng.randint(1, 4)):
            turns.append({"from": "human", "value": text(rng.randint(16, 1024))})
            turns.append({"from": "gpt", "value": text(rng.randint(16, 512))})
            made += 1
        conversations.append({"id": "c%d" % len(conversations), "conversations": turns})
    with open(args.out, "w") as f:
        json.dump(conversations, f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("format", choices=["mooncake", "burstgpt", "sharegpt"])
    p.add_argument("out")
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--rate", type=float, default=5.0, help="requests per second")
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--prompt-blocks", type=int, default=4)
    p.add_argument("--follow-up", type=float, default=0.5)
    p.add_argument("--max-new-tokens", type=int, default=4096,
                   help="mooncake: most new tokens of a request beyond its prefix")
    args = p.parse_args()
    rng = random.Random(args.seed)
    {"mooncake": mooncake, "burstgpt": burstgpt, "sharegpt": sharegpt}[args.format](args, rng)


if __name__ == "__main__":
    main()
