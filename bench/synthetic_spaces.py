#!/usr/bin/python3
"""Held-out, GPU-like tuning spaces for checking a search's generality (bench/synthetic_spaces.py).

SYNTHETIC: every time here comes from a simple analytic model of a GPU kernel on a simulated
device, not from a measurement. The spaces exist so that a search's defaults can be checked on
spaces that were not used to tune them (the recorded spaces of shared/datasets are the benchmark;
these models were written from public knowledge of GPU performance, without looking at them).

Each file is a complete space in the format of shared/datasets/README.md: a header of the
parameters (constants included, as single-valued columns), `time_ms` (mean of the samples, `inf`
for a failed config) and `samples` (32 run times in ms, `;`-separated); one row per config that
satisfies the family's restrictions, in lexicographic order of the parameter value lists.
`tunekit-replay --dataset FILE.csv` loads them; `--flop` takes the FLOP count that --list prints.

Families (kernel models) and their knobs:
  gemm       tiled SGEMM C = A B (M = N = K = size): threads per block BX x BY, per-thread
             register tile TM x TN, vector width VW, k-slice KB, shared-memory caching of A and B
             (SA, SB), k-loop unrolling (UNR), in half the files double buffering (DB).
  conv       2D convolution, F x F filter on a size x size image: block BX x BY, per-thread output
             tile TX x TY, shared-memory input tile (SHM) with row padding (PAD), read-only-cache
             loads (RO), unrolled filter loops (UNR).
  reduction  sum of `size` floats: block size BS, vector width VW, loads in flight per thread
             (ILP), resident blocks per SM of a grid-stride grid (GRID), warp-shuffle tree (SHUF),
             atomic final step instead of a second kernel (ATOM).

Model ingredients: occupancy (threads, registers and shared memory per block against the
device's per-SM limits), latency hiding from occupancy x instruction-level parallelism, issue
overhead (loads, loop control), a roofline of compute, shared-memory/L1 and DRAM times with
partial overlap, coalescing, shared-memory bank conflicts (computed from the access pattern),
register spills, synchronisation, wave-quantisation tail effects, and a small fixed per-config
"compiler" factor. Failed configs (inf): a launch that needs more registers or shared memory per
block than the device has (the restrictions are device-independent, as in real spaces).
Noise: multiplicative lognormal (sigma 1-3% per config), a slower first sample (warm-up), rare
outliers.

  /usr/bin/python3 bench/synthetic_spaces.py --out /tmp/synth            # the default 8 spaces
  /usr/bin/python3 bench/synthetic_spaces.py --list                      # describe them, write nothing
  /usr/bin/python3 bench/synthetic_spaces.py --out DIR --count 12 --seed 5
  /usr/bin/python3 bench/synthetic_spaces.py --out DIR --family conv --device simB --count 1

Deterministic: the same --seed (default 1) and arguments give byte-identical files.
"""

import argparse
import itertools
import pathlib
import sys

import numpy as np

SAMPLES = 32

# Simulated devices. Loosely shaped like a data-centre GPU (simA), a consumer GPU (simB) and a
# GPU with 64-wide wavefronts and a larger register file but 64 KiB of local memory (simC).
DEVICES = {
    "simA": dict(sms=108, peak_gflops=19500.0, bw_gbs=1500.0, warp=32, max_threads_block=1024,
                 max_threads_sm=2048, max_blocks_sm=32, regs_sm=65536, regs_block=65536,
                 max_regs_thread=255, smem_sm=164 * 1024, smem_block=48 * 1024,
                 smem_bytes_clk_sm=128.0, clock_ghz=1.41, launch_us=4.0, noise=0.012),
    "simB": dict(sms=46, peak_gflops=13400.0, bw_gbs=448.0, warp=32, max_threads_block=1024,
                 max_threads_sm=1024, max_blocks_sm=16, regs_sm=65536, regs_block=65536,
                 max_regs_thread=255, smem_sm=64 * 1024, smem_block=48 * 1024,
                 smem_bytes_clk_sm=128.0, clock_ghz=1.78, launch_us=6.0, noise=0.025),
    "simC": dict(sms=60, peak_gflops=11500.0, bw_gbs=1000.0, warp=64, max_threads_block=1024,
                 max_threads_sm=2560, max_blocks_sm=40, regs_sm=131072, regs_block=65536,
                 max_regs_thread=255, smem_sm=64 * 1024, smem_block=32 * 1024,
                 smem_bytes_clk_sm=128.0, clock_ghz=1.5, launch_us=8.0, noise=0.018),
}

# The default set: (family, device) per file.
DEFAULT_SET = [("gemm", "simA"), ("gemm", "simB"), ("gemm", "simC"),
               ("conv", "simA"), ("conv", "simB"), ("conv", "simC"),
               ("reduction", "simA"), ("reduction", "simB")]


def product(params):
    """The Cartesian product of the value lists, lexicographic: one array per parameter."""
    names = list(params)
    grids = np.meshgrid(*[np.asarray(params[n], dtype=np.int64) for n in names], indexing="ij")
    return {n: g.ravel() for n, g in zip(names, grids)}


def occupancy(dev, threads, regs, smem):
    """Resident blocks per SM, active warps per SM and the failure mask (launch impossible)."""
    warp = dev["warp"]
    regs_alloc = np.ceil(np.minimum(regs, dev["max_regs_thread"]) / 8.0) * 8.0
    warps_block = np.ceil(threads / warp)
    fail = (regs_alloc * warps_block * warp > dev["regs_block"]) | (smem > dev["smem_block"])
    by_threads = dev["max_threads_sm"] // (warps_block * warp)
    by_regs = np.floor(dev["regs_sm"] / (regs_alloc * warps_block * warp))
    by_smem = np.where(smem > 0, np.floor(dev["smem_sm"] / np.maximum(smem, 1)), dev["max_blocks_sm"])
    blocks = np.minimum.reduce([np.full(threads.shape, dev["max_blocks_sm"], dtype=float),
                                by_threads.astype(float), by_regs, by_smem])
    fail |= blocks < 1
    blocks = np.maximum(blocks, 1)
    return blocks, blocks * warps_block, fail


def latency_hiding(active_warps, ilp, dev, p0):
    """Fraction of peak issue rate reached with active_warps x ilp independent operations."""
    per_sched = active_warps * (32.0 / dev["warp"]) * np.minimum(ilp, 16)
    return 1.0 - np.exp(-per_sched / p0)


def tail_factor(blocks_total, concurrent):
    """Wave quantisation: the last partial wave costs almost a full one."""
    waves = blocks_total / concurrent
    return np.ceil(waves) / np.maximum(waves, 1e-9) * 0.85 + 0.15


def combine(times, overlap=0.25):
    """The slowest of the roofline components plus part of the others (imperfect overlap)."""
    t = np.vstack(times)
    m = t.max(axis=0)
    return m + overlap * (t.sum(axis=0) - m)


def bank_conflict_degree(rows, row_words, col_stride, warp):
    """Bank-conflict degree (most distinct words in one of 32 banks) of one warp's 32-bit reads
    of a shared-memory tile: `rows` threads along x per block row, thread (x, y) reading word
    y*row_words + x*col_stride."""
    lanes = np.arange(min(warp, 32))
    x = lanes % rows
    y = lanes // rows
    addr = y * row_words + x * col_stride
    bank = addr % 32
    worst = 1
    for b in np.unique(bank):
        worst = max(worst, len(np.unique(addr[bank == b])))
    return worst


# --------------------------------------------------------------------------------------------
# Families. Each returns (params, constants, restriction mask fn, model fn, flop, description).

def gemm_space(rng, dev):
    size = int(rng.choice([1024, 2048, 3000, 4096]))
    params = {
        "BX": [8, 16, 32],
        "BY": [8, 16, 32],
        "TM": [1, 2, 4, 8],
        "TN": [1, 2, 4, 8],
        "VW": [1, 2, 4, 8] if rng.random() < 0.5 else [1, 2, 4],
        "KB": [8, 16, 32, 64] if rng.random() < 0.5 else [8, 16, 32],
        "SA": [0, 1],
        "SB": [0, 1],
        "UNR": [0, 1],
    }
    if rng.random() < 0.5:
        params["DB"] = [0, 1]  # double-buffered shared-memory tiles
    consts = {"SIZE": size, "PRECISION": 32}

    def restrict(p):
        t = p["BX"] * p["BY"]
        # vector loads along M inside a thread's tile; the cooperative smem fill divides evenly
        db = p.get("DB", 0)
        smem = 4 * p["KB"] * (p["SA"] * p["BX"] * p["TM"] + p["SB"] * p["BY"] * p["TN"]) * (1 + db)
        return ((p["SA"] + p["SB"] > 0) | (db == 0)) & ((p["TM"] % p["VW"] == 0) & (t >= 64) & (t <= 512) & (smem <= 64 * 1024)
                & ((p["BX"] * p["TM"] * p["KB"]) % t == 0)
                & ((p["BY"] * p["TN"] * p["KB"]) % t == 0)
                & ((p["SA"] + p["SB"] > 0) | (p["KB"] <= 32)))

    def model(p, dev):
        bx, by, tm, tn, vw, kb = (p[k].astype(float) for k in ("BX", "BY", "TM", "TN", "VW", "KB"))
        sa, sb, unr = p["SA"], p["SB"], p["UNR"]
        db = p.get("DB", np.zeros_like(sa))
        t = bx * by
        mt, nt = bx * tm, by * tn
        s = float(size)
        regs = 22 + tm * tn + (tm + tn) * (1 + unr) + 2 * vw + 4 * (sa + sb < 2) + 6 * unr + 4 * db
        smem = 4.0 * kb * (sa * mt + sb * nt) * (1 + db)
        blocks_sm, warps_sm, fail = occupancy(dev, t, regs, smem)
        spill = 1.0 + 0.015 * np.maximum(regs - dev["max_regs_thread"], 0)
        # issue: per k step tm*tn FMAs against loads and loop control
        loads = np.where(sa == 1, tm / np.minimum(vw, 4), tm / vw * 1.6) + np.where(sb == 1, tn, tn * 1.6)
        ctrl = 3.0 * np.where(unr == 1, 0.3, 1.0)
        issue = tm * tn / (tm * tn + loads + ctrl)
        hide = latency_hiding(warps_sm / 4.0, tm * tn, dev, 6.0)
        sync = np.where(sa + sb > 0, kb * tm * tn / (kb * tm * tn + np.where(db == 1, 4.0, 12.0) * (1 + (t >= 512))), 1.0)
        waste = (np.ceil(s / mt) * mt / s) * (np.ceil(s / nt) * nt / s)
        flops = 2.0 * s ** 3 * waste
        t_comp = flops / (dev["peak_gflops"] * 1e9 * issue * hide * sync)
        # shared memory / L1 bytes per FMA, with bank conflicts of the cached tiles
        conf_a = np.where(sa == 1, np.maximum(1.0, tm / vw), 1.0)
        conf_b = np.where(sb == 1, np.minimum(np.maximum(1.0, 32.0 / bx), tn), 1.0)
        l1_bytes = 4.0 * (conf_a * tm * np.where(sa == 1, 1.0, 1.6) + conf_b * tn * np.where(sb == 1, 1.0, 1.6))
        fma = s ** 3 * waste / (tm * tn)  # thread-k-steps
        smem_bw = dev["smem_bytes_clk_sm"] * dev["clock_ghz"] * 1e9 * dev["sms"]
        t_smem = fma * l1_bytes / smem_bw
        # DRAM traffic: reuse of A across the N tile (block-wide if cached, else thread + L1)
        reuse_a = np.where(sa == 1, nt, tn * np.minimum(by, 4) * 0.7)
        reuse_b = np.where(sb == 1, mt, tm * np.minimum(bx, 4) * 0.7)
        dram = 4.0 * s ** 3 * (1.0 / reuse_a + 1.0 / reuse_b) * 0.5 + 4.0 * s * s
        coal = np.minimum(1.0, np.sqrt(np.where(sa == 1, mt * 4.0, bx * tm * 4.0) / 128.0))
        inflight = 1.0 - np.exp(-warps_sm * vw / 24.0)
        t_dram = dram / (dev["bw_gbs"] * 1e9 * np.maximum(coal, 0.2) * inflight)
        blocks_total = np.ceil(s / mt) * np.ceil(s / nt)
        tail = tail_factor(blocks_total, blocks_sm * dev["sms"])
        sec = combine([t_comp, t_smem, t_dram], np.where(db == 1, 0.1, 0.25)) * tail * spill
        return (sec + dev["launch_us"] * 1e-6) * 1e3, fail

    return params, consts, restrict, model, 2.0 * size ** 3, f"tiled SGEMM {size}^3"


def conv_space(rng, dev):
    size = int(rng.choice([3072, 4096, 6000]))
    f = int(rng.choice([7, 9, 11, 13]))
    params = {
        "BX": [16, 32, 48, 64, 128],
        "BY": [1, 2, 4, 8, 16],
        "TX": [1, 2, 4] if rng.random() < 0.5 else [1, 2, 3, 4, 8],
        "TY": [1, 2, 3, 4, 8] if rng.random() < 0.5 else [1, 2, 4, 8],
        "RO": [0, 1],
        "SHM": [0, 1],
        "PAD": [0, 1],
        "UNR": [0, 1],
    }
    consts = {"FILTER": f, "IMAGE": size}

    def restrict(p):
        t = p["BX"] * p["BY"]
        tile = (p["BX"] * p["TX"] + f - 1 + p["PAD"]) * (p["BY"] * p["TY"] + f - 1)
        return ((t >= 32) & (t <= 1024) & ((p["PAD"] == 0) | (p["SHM"] == 1))
                & ((p["RO"] == 0) | (p["SHM"] == 0)) & ((p["SHM"] == 0) | (tile * 4 <= 64 * 1024)))

    conf_cache = {}

    def conflicts(bx, tx, rw):
        key = (bx, tx, rw)
        if key not in conf_cache:
            conf_cache[key] = bank_conflict_degree(bx, rw, tx, dev["warp"])
        return conf_cache[key]

    def model(p, dev):
        bx, by, tx, ty = (p[k].astype(float) for k in ("BX", "BY", "TX", "TY"))
        ro, shm, pad, unr = p["RO"], p["SHM"], p["PAD"], p["UNR"]
        t = bx * by
        s = float(size)
        ff = float(f * f)
        regs = 18 + 2 * tx * ty + unr * (f + 10 + tx * ty) + np.where(shm == 1, 0, 6) + 2 * ro
        smem = np.where(shm == 1, 4.0 * (bx * tx + f - 1 + pad) * (by * ty + f - 1), 0.0)
        blocks_sm, warps_sm, fail = occupancy(dev, t, regs, smem)
        spill = 1.0 + 0.02 * np.maximum(regs - dev["max_regs_thread"], 0)
        outputs = tx * ty
        window = (tx + f - 1) * (ty + f - 1) / outputs  # loads per output
        load_cost = np.where(shm == 1, 1.0, np.where(ro == 1, 1.4, 2.0))
        ctrl = ff * 0.6 * np.where(unr == 1, 0.15, 1.0) / tx
        # unrolled filter loops keep the input window in registers (reused across the outputs);
        # rolled ones load every input once per output
        loads_out = np.where(unr == 1, window, ff)
        issue = ff / (ff + loads_out * load_cost + ctrl)
        hide = latency_hiding(warps_sm / 4.0, outputs * np.where(unr == 1, 2.0, 1.0), dev, 5.0)
        waste = (np.ceil(s / (bx * tx)) * bx * tx / s) * (np.ceil(s / (by * ty)) * by * ty / s)
        flops = 2.0 * s * s * ff * waste
        t_comp = flops / (dev["peak_gflops"] * 1e9 * issue * hide)
        rw = (p["BX"] * p["TX"] + f - 1 + p["PAD"]).astype(int)
        conf = np.ones(len(t))
        for key in set(zip(p["BX"].tolist(), p["TX"].tolist(), rw.tolist())):
            m = (p["BX"] == key[0]) & (p["TX"] == key[1]) & (rw == key[2])
            conf[m] = conflicts(*key)
        conf = np.where(shm == 1, conf, 1.0)
        l1_eff = np.where(shm == 1, 1.0, np.where(ro == 1, 0.75, 0.5))
        smem_bw = dev["smem_bytes_clk_sm"] * dev["clock_ghz"] * 1e9 * dev["sms"]
        t_smem = s * s * waste * loads_out * 4.0 * conf / (smem_bw * l1_eff)
        halo = (bx * tx + f - 1) * (by * ty + f - 1) / (bx * tx * by * ty)
        miss = np.where(shm == 1, 1.0, 1.0 + 1.5 * np.exp(-(blocks_sm * t) / 512.0))
        dram = 4.0 * s * s * (halo * miss + 1.0)
        coal = np.minimum(1.0, bx * 4.0 / 128.0) ** 0.7
        inflight = 1.0 - np.exp(-warps_sm * np.minimum(outputs, 8) / 16.0)
        t_dram = dram / (dev["bw_gbs"] * 1e9 * coal * inflight)
        # the shared-memory fill waits on DRAM and a barrier unless other blocks overlap it
        fill = np.where(shm == 1, 1.0 + 0.35 / blocks_sm, 1.0)
        blocks_total = np.ceil(s / (bx * tx)) * np.ceil(s / (by * ty))
        tail = tail_factor(blocks_total, blocks_sm * dev["sms"])
        sec = combine([t_comp, t_smem, t_dram], 0.3) * fill * tail * spill + dev["launch_us"] * 1e-6
        return sec * 1e3, fail

    return params, consts, restrict, model, 2.0 * size * size * f * f, f"2D convolution {size}^2, {f}x{f} filter"


def reduction_space(rng, dev):
    size = int(rng.choice([1 << 24, 1 << 26, 50_000_000]))
    params = {
        "BS": [32, 64, 128, 256, 512, 1024],
        "VW": [1, 2, 4],
        "ILP": [1, 2, 4, 8],
        "GRID": [1, 2, 3, 4, 6, 8, 16, 32] if rng.random() < 0.5 else [1, 2, 4, 8, 16, 32, 64],
        "SHUF": [0, 1],
        "ATOM": [0, 1],
        "LOOP": [0, 1, 2],
    }
    consts = {"N": size}

    def restrict(p):
        return ((p["BS"] * p["GRID"] <= 16384) & ((p["SHUF"] == 1) | (p["BS"] >= 64))
                & ((p["LOOP"] != 2) | (p["ILP"] > 1)))

    def model(p, dev):
        bs, vw, ilp, grid = (p[k].astype(float) for k in ("BS", "VW", "ILP", "GRID"))
        shuf, atom, loop = p["SHUF"], p["ATOM"], p["LOOP"]
        n = float(size)
        regs = 16 + 2 * vw * ilp + 4 * (loop == 2) + 2 * shuf
        smem = np.where(shuf == 1, 4.0 * bs / dev["warp"], 4.0 * bs)
        blocks_sm, warps_sm, fail = occupancy(dev, bs, regs, smem)
        resident = np.minimum(grid, blocks_sm)
        blocks_total = grid * dev["sms"]
        # grid-stride loop: blocks beyond the resident ones run in later waves
        waves = np.ceil(blocks_total / (blocks_sm * dev["sms"]))
        active = resident * bs / dev["warp"]
        bytes_in_flight = active * dev["warp"] * vw * 4.0 * ilp  # per SM
        need = dev["bw_gbs"] * 1e9 * 600e-9 / dev["sms"]  # Little's law at ~600 ns latency
        bw_eff = 1.0 - np.exp(-bytes_in_flight / need)
        bw_eff *= np.where(vw == 4, 1.0, np.where(vw == 2, 0.97, 0.9))
        loop_eff = np.where(loop == 0, 0.93, np.where(loop == 1, 1.0, 0.985))
        t_dram = 4.0 * n / (dev["bw_gbs"] * 1e9 * bw_eff * loop_eff)
        per_elem_ops = 1.0 + 2.0 / (vw * ilp) * np.where(loop == 1, 0.5, 1.0)
        t_comp = n * per_elem_ops / (dev["peak_gflops"] * 0.5e9 * np.minimum(1.0, active / 16.0))
        steps = np.log2(bs)
        tree = np.where(shuf == 1, steps * 0.03 + 0.15, steps * 0.12 + 0.1) * 1e-6
        imbalance = np.ceil(n / (blocks_total * bs * vw)) * blocks_total * bs * vw / n
        final = np.where(atom == 1, blocks_total * 4e-9 * (1 + (grid >= 16) * 2.0),
                         dev["launch_us"] * 1e-6 + blocks_total * 2e-10 * 40)
        sec = (combine([t_dram, t_comp], 0.15) * imbalance * (1 + 0.08 * (waves > 1) * waves / (waves + 1))
               + tree * waves + final + dev["launch_us"] * 1e-6)
        return sec * 1e3, fail

    return params, consts, restrict, model, float(size), f"sum reduction of {size} floats"


FAMILIES = {"gemm": gemm_space, "conv": conv_space, "reduction": reduction_space}


def build(family, device, seed):
    """One space: its rows (values, time_ms, samples) and a description."""
    rng = np.random.default_rng([seed, sorted(FAMILIES).index(family), sorted(DEVICES).index(device)])
    dev = DEVICES[device]
    params, consts, restrict, model, flop, what = FAMILIES[family](rng, dev)
    full = product(params)
    total = len(next(iter(full.values())))
    keep = restrict(full)
    p = {k: v[keep] for k, v in full.items()}
    ms, fail = model(p, dev)
    n = len(ms)
    # a fixed per-config factor: what the model misses (compiler choices, alignment, ...)
    ms = ms * np.exp(rng.normal(0.0, 0.04, n))
    sigma = dev["noise"] * np.exp(rng.normal(0.0, 0.35, n))
    samples = ms[:, None] * np.exp(rng.normal(0.0, 1.0, (n, SAMPLES)) * sigma[:, None])
    warm = rng.random(n) < 0.7
    samples[:, 0] *= 1.0 + warm * rng.uniform(0.0, 0.08, n)
    out = rng.random((n, SAMPLES)) < 0.004
    samples = np.where(out, samples * rng.uniform(1.2, 2.5, (n, SAMPLES)), samples)
    mean = samples.mean(axis=1)
    mean[fail] = np.inf
    names = list(params) + list(consts)
    cols = [p[k] for k in params] + [np.full(n, v, dtype=np.int64) for v in consts.values()]
    return dict(names=names, cols=cols, mean=mean, samples=samples, fail=fail, total=total,
                flop=flop, what=what, family=family, device=device, params=params, consts=consts)


def write_csv(space, path):
    lines = [",".join(space["names"] + ["time_ms", "samples"])]
    vals = np.column_stack(space["cols"])
    for i in range(len(space["mean"])):
        head = ",".join(str(int(v)) for v in vals[i])
        if space["fail"][i]:
            lines.append(f"{head},inf,")
        else:
            lines.append(f"{head},{space['mean'][i]:.6g}," + ";".join(f"{x:.6g}" for x in space["samples"][i]))
    path.write_text("\n".join(lines) + "\n")


def describe(name, space):
    fin = space["mean"][np.isfinite(space["mean"])]
    best = fin.min()
    med = float(np.median(fin))
    within5 = int((fin <= best * 1.05).sum())
    return (f"{name}: {space['what']} on {space['device']} ({space['family']}); "
            f"{space['total']} combinations, {len(space['mean'])} valid, {int(space['fail'].sum())} failed; "
            f"best {best:.5g} ms, median/best {med / best:.2f}, {within5} within 5% of best; "
            f"FLOP per run {space['flop']:.0f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="directory for the CSVs (created)")
    ap.add_argument("--seed", type=int, default=1, help="base seed (default 1)")
    ap.add_argument("--count", type=int, help="number of spaces (default: the 8 of the default set)")
    ap.add_argument("--family", choices=sorted(FAMILIES), help="only this family")
    ap.add_argument("--device", choices=sorted(DEVICES), help="only this device")
    ap.add_argument("--list", action="store_true", help="describe the spaces and write nothing")
    a = ap.parse_args(argv)
    if not a.list and not a.out:
        ap.error("--out DIR or --list")
    fams = [a.family] if a.family else sorted(FAMILIES)
    devs = [a.device] if a.device else sorted(DEVICES)
    if a.count is None and not a.family and not a.device:
        specs = DEFAULT_SET
    else:
        cyc = [(f, d) for f, d in itertools.product(fams, devs)]
        specs = [cyc[i % len(cyc)] for i in range(a.count or len(cyc))]
    out = pathlib.Path(a.out) if a.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    index = []
    for i, (fam, dev) in enumerate(specs):
        seed = a.seed * 1000 + i
        space = build(fam, dev, seed)
        name = f"synth_{fam}_{dev}_s{seed}"
        line = describe(name, space)
        print(line, flush=True)
        index.append(line)
        if out:
            write_csv(space, out / f"{name}.csv")
    if out:
        (out / "spaces.txt").write_text(
            "SYNTHETIC tuning spaces (analytic models, not measurements), written by\n"
            f"  bench/synthetic_spaces.py {' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
            + "\n".join(index) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
