"""The catalog's entries: accelerator hardware and model architectures, each with its source.

Pure data (typed entries built from the spec-sheet and config.json values); the types are in
:mod:`._catalog_types`, the lookups in :mod:`._catalog`. Spec-sheet values come from
``docs/reference/hardware-specs.csv`` and ``models.csv`` (their sources are repeated on each entry).
"""

from __future__ import annotations

from typing import Any

from voicebudget.inference._catalog_types import (
    ChipPrice,
    Hardware,
    HostedPath,
    ModelArch,
    SramTiming,
    model_from_hf_dict,
)

__all__ = ["HARDWARE", "MODELS", "MODEL_ALIASES"]


def _hw(**kw: object) -> Hardware:
    return Hardware.model_validate(kw)


_SPECS = "docs/reference/hardware-specs.csv"
_PRICE_SRC = "mercatus-ai.com/blog/cloud-gpu-pricing (May 2026), specialty-cloud on-demand range midpoint"

HARDWARE: dict[str, Hardware] = {
    h.id: h
    for h in (
        _hw(
            id="a100-40gb",
            name="NVIDIA A100 SXM 40GB",
            memory_bytes=40e9,
            memory_bandwidth_bytes_per_s=1.555e12,
            bf16_flops_per_s=312e12,
            scaleup_link_bytes_per_s=300e9,
            source="NVIDIA A100 datasheet (1.555 TB/s, 312 TFLOP/s bf16 dense, NVLink3 600 GB/s bidirectional); "
            "8 us collective floor as for H100 (cli99/llm-analysis)",
        ),
        _hw(
            id="a100-80gb",
            name="NVIDIA A100 SXM 80GB",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=2.0e12,
            bf16_flops_per_s=312e12,
            scaleup_link_bytes_per_s=300e9,
            price=ChipPrice(usd_per_chip_hour=1.30, source=_PRICE_SRC + " ($1.10-1.50)"),
            source="NVIDIA A100 datasheet (2.0 TB/s, 312 TFLOP/s bf16 dense); TensorRT-LLM v0.5 performance.md",
        ),
        _hw(
            id="a100-pcie-80gb",
            name="NVIDIA A100 PCIe 80GB",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=1.935e12,
            bf16_flops_per_s=312e12,
            scaleup_link_bytes_per_s=32e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            source="NVIDIA A100 datasheet, PCIe 80GB column (1,935 GB/s, 312 TFLOP/s bf16 dense, PCIe Gen4 "
            "64 GB/s both directions = 32 GB/s one way); no NVLink bridge assumed (Azure NC A100 v4); "
            "25 us all-reduce floor and 8 us per further ring step through the PCIe root complex (assumption, "
            "about 3x and 8x the NVLink figures)",
        ),
        _hw(
            id="h100-pcie",
            name="NVIDIA H100 PCIe 80GB",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=2.0e12,
            bf16_flops_per_s=756.5e12,
            fp8_flops_per_s=1513e12,
            scaleup_link_bytes_per_s=64e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            price=ChipPrice(
                usd_per_chip_hour=2.19,
                source="gpu.blog/gpus/nvidia-h100-pcie (read 2026-12-01): "
                "on-demand $1.99 (Civo) to $2.39 (RunPod), midpoint",
            ),
            source="NVIDIA H100 spec table, PCIe column (archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html, read "
            "2026-12-01): 80 GB HBM2e, 2,000 GB/s, BF16 1,513 / FP8 3,026 TFLOPS with sparsity (dense: "
            "half), PCIe Gen5 128 GB/s both directions (64 GB/s one way; the 600 GB/s NVLink bridge joins "
            "pairs only, not modelled); NVIDIA H100 PCIe product brief PB-11133-001_v02 (> 2,000 GB/s, "
            "350 W); PCIe collective latencies as a100-pcie-80gb (assumption)",
        ),
        _hw(
            id="l40s",
            name="NVIDIA L40S",
            memory_bytes=48e9,
            memory_bandwidth_bytes_per_s=864e9,
            bf16_flops_per_s=362.05e12,
            fp8_flops_per_s=733e12,
            scaleup_link_bytes_per_s=32e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            source="NVIDIA L40S datasheet table as reproduced at mullet.se/product.html?product_id=355414 and "
            "itcreations.com/nvidia-gpu/nvidia-l40s-gpu-accelerator (read 2026-12-01): 48 GB GDDR6, "
            "864 GB/s, BF16 362.05 (733 sparse) / FP8 733 (1,466 sparse) TFLOPS, PCIe Gen4 x16 64 GB/s "
            "both directions, no NVLink; PCIe collective latencies as a100-pcie-80gb (assumption)",
        ),
        _hw(
            id="l4",
            name="NVIDIA L4",
            memory_bytes=24e9,
            memory_bandwidth_bytes_per_s=300e9,
            bf16_flops_per_s=121e12,
            fp8_flops_per_s=242.5e12,
            scaleup_link_bytes_per_s=32e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            source="NVIDIA L4 datasheet figures as quoted at store.sourcecode.com (compare 125/9820) and "
            "grokipedia.com/page/NVIDIA_L4_vs_L40S (read 2026-12-01): 24 GB GDDR6, 300 GB/s, FP16/BF16 242 "
            "and FP8 485 TFLOPS with sparsity (dense: half), PCIe Gen4 x16, 72 W; PCIe collective "
            "latencies as a100-pcie-80gb (assumption)",
        ),
        _hw(
            id="h100-sxm",
            name="NVIDIA H100 SXM",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=3.35e12,
            bf16_flops_per_s=989e12,
            fp8_flops_per_s=1979e12,
            scaleup_link_bytes_per_s=450e9,
            price=ChipPrice(usd_per_chip_hour=3.00, source=_PRICE_SRC + " ($2.50-3.50)"),
            source=f"{_SPECS}: NVIDIA H100 datasheet; jax-ml/scaling-book gpus.md; "
            "cli99/llm-analysis h100-sxm-80gb.json (8 us small-message floor)",
        ),
        _hw(
            id="h200",
            name="NVIDIA H200 SXM",
            memory_bytes=141e9,
            memory_bandwidth_bytes_per_s=4.8e12,
            bf16_flops_per_s=989e12,
            fp8_flops_per_s=1979e12,
            scaleup_link_bytes_per_s=450e9,
            price=ChipPrice(usd_per_chip_hour=4.00, source=_PRICE_SRC + " ($3.50-4.50)"),
            source=f"{_SPECS}: NVIDIA H200 datasheet; MLPerf v4.1 H200 system json",
        ),
        _hw(
            id="b200",
            name="NVIDIA B200",
            memory_bytes=180e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2250e12,
            fp8_flops_per_s=4500e12,
            fp4_flops_per_s=9000e12,
            scaleup_link_bytes_per_s=900e9,
            source=f"{_SPECS}: jax-ml/scaling-book; MLPerf v6.0 B200 system json; "
            "collective floor as H100 (assumption)",
        ),
        _hw(
            id="gb200",
            name="NVIDIA GB200 NVL72 (per GPU)",
            memory_bytes=186e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2500e12,
            fp8_flops_per_s=5000e12,
            fp4_flops_per_s=10000e12,
            scaleup_link_bytes_per_s=900e9,
            collective_latency_ms=0.008,
            max_tensor_parallel=72,
            source=f"{_SPECS}: NVIDIA GB200 NVL72 figures; MLPerf v5.1 GB200 system json (186 GB); one NVLink "
            "domain of 72 GPUs; collective floor as H100 (GenZ assumes 0.25 us per hop, not per all-reduce)",
        ),
        _hw(
            id="mi300x",
            name="AMD Instinct MI300X",
            memory_bytes=192e9,
            memory_bandwidth_bytes_per_s=5.3e12,
            bf16_flops_per_s=1307e12,
            fp8_flops_per_s=2615e12,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="xgmi",
            software_efficiency=0.70,
            software_efficiency_source="set so that 8 x MI300X serve Llama-2-70B fp8 at 0.975x the tokens/s of "
            "8 x H100 at saturation: AMD's MLPerf Inference v4.1 result, 'within 2-3% of "
            "NVIDIA DGX H100' in Server and Offline at FP8 (AMD announcement, Aug 2024, as "
            "summarised by partofstyle.com; read 2026-11-30); specs alone give 1.35x",
            source=f"{_SPECS}: AMD MI300X datasheet; MLPerf v4.1 AMD system json; GenZ system_configs.py (400 GB/s); "
            "collective floor as H100 (assumption)",
        ),
        _hw(
            id="mi325x",
            name="AMD Instinct MI325X",
            memory_bytes=256e9,
            memory_bandwidth_bytes_per_s=6.0e12,
            bf16_flops_per_s=1307.4e12,
            fp8_flops_per_s=2614.9e12,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="xgmi",
            software_efficiency=0.70,
            software_efficiency_source="as mi300x (same CDNA 3 compute dies and ROCm serving stack; assumption)",
            price=ChipPrice(
                usd_per_chip_hour=2.13,
                source="awesomeagents.ai/hardware/amd-mi325x (read 2026-12-01): cloud rental $2.00-2.25/h, midpoint",
            ),
            source="AMD MI325X specifications as tabulated at awesomeagents.ai/hardware/amd-mi325x and "
            "wiaix.com/amd-instincttm-mi325x-accelerators (read 2026-12-01): 256 GB HBM3E, 6 TB/s, FP16/BF16 "
            "1,307.4 and FP8 2,614.9 TFLOPS dense (5,229.8 sparse), seven Infinity Fabric links joining 8 GPUs "
            "(link bandwidth and collective floor as mi300x)",
        ),
        _hw(
            id="mi355x",
            name="AMD Instinct MI355X",
            memory_bytes=288e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2.52e15,
            fp8_flops_per_s=5.03e15,
            fp4_flops_per_s=10.05e15,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="xgmi",
            software_efficiency=0.90,
            software_efficiency_source="set so that the fp8 compute-bound peak times efficiency is B200's "
            "(5.03 x 0.90 = 4.53 vs 4.5 PFLOP/s): MI355X matched B200 on Llama-2-70B "
            "throughput in MLPerf Inference v6.0 (aiwiki.ai/wiki/amd_instinct_mi355x, "
            "read 2026-12-01); both have 8 TB/s, so memory-bound decode is at 0.9x B200 "
            "(assumption)",
            source="AMD MI355X figures read 2026-12-01: 288 GB HBM3E and 8 TB/s (tomshardware.com 'AMD's Instinct "
            "MI355X accelerator will consume 1,400 watts', ISC 2025; MLPerf Inference v6.0 AMD system json, "
            "288 GB); "
            "FP8 5 PFLOP/s dense (ISSCC 2026 paper as reported at world-today-news.com/?p=7253162: 8,192 FP8 "
            "FLOPs per clock per CU, x 256 CUs (ROCm GPU specifications table) x 2.4 GHz (Hot Chips 2025, "
            "wccftech) = 5.03 PFLOP/s); FP16/BF16 2.52 PFLOP/s dense (table at "
            "gangliao.me/blog/2026/amd-gpu-architecture-deep-dive: the row is labelled FP32 but gives MI300X "
            "1.31 PFLOP/s, its FP16 matrix rate; = 4,096 FLOPs/clock/CU x 256 x 2.4 GHz); FP4 20.1 PFLOP/s "
            "with sparsity "
            "(svethardware.cz, tomshardware.com), dense half; Infinity Fabric link bandwidth and collective "
            "floor as mi300x (assumption)",
        ),
        _hw(
            id="gb300",
            name="NVIDIA GB300 NVL72 (per GPU)",
            memory_bytes=279e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2.5e15,
            fp8_flops_per_s=5.0e15,
            fp4_flops_per_s=15.0e15,
            scaleup_link_bytes_per_s=900e9,
            collective_latency_ms=0.008,
            max_tensor_parallel=72,
            source="NVIDIA GB300 NVL72 rack figures (GTC 2025), as quoted at glennklockwood.com/garden/processors/B300 "
            "and vendordeep.com (read 2026-12-01): 1,080 PFLOP/s dense FP4 (1,440 sparse), 360 PFLOP/s dense "
            "FP8, 20 TB HBM3e at 576 TB/s across 72 GPUs = 15 / 5 PFLOP/s and 8 TB/s per GPU; per-GPU "
            "dense BF16 2.5 PFLOP/s and 279 GB usable HBM3e (288 GB nominal, 12-high stacks) from the "
            "per-GPU table at verda.com/blog/gb300-nvl72-architecture; NVLink 5 1.8 TB/s both directions, "
            "one 72-GPU domain; collective floor as gb200 (assumption)",
        ),
        _hw(
            id="gh200",
            name="NVIDIA GH200 Grace Hopper (96 GB HBM3)",
            memory_bytes=96e9,
            memory_bandwidth_bytes_per_s=4.0e12,
            bf16_flops_per_s=989e12,
            fp8_flops_per_s=1979e12,
            scaleup_link_bytes_per_s=450e9,
            source="NVIDIA GH200 figures read 2026-12-01: 96 GB HBM3 at 4 TB/s beside 480 GB LPDDR5X on the Grace CPU "
            "(NVIDIA's Aug 2023 announcement as reported at nishikiout.net/entry/2023/08/09/143040; "
            "spheron.network/blog/nvidia-gh200-guide); the GPU is an H100, so FLOP/s as h100-sxm (assumption: "
            "same clocks); the CPU's LPDDR5X (NVLink-C2C, 900 GB/s both directions) is not used for weights or "
            "KV cache here; GPU-to-GPU over NVLink 4 (450 GB/s one way) through the NVLink Switch System, "
            "8 per group as h100-sxm (assumption). The HBM3e variant is left out: its figures differ between "
            "NVIDIA's announcement (141 GB, 5 TB/s) and later datasheets (144 GB, 4.9 TB/s)",
        ),
        _hw(
            id="h20",
            name="NVIDIA H20",
            memory_bytes=96e9,
            memory_bandwidth_bytes_per_s=4.0e12,
            bf16_flops_per_s=148e12,
            scaleup_link_bytes_per_s=450e9,
            source="NVIDIA publishes no H20 datasheet page; figures as reported at willitrunai.com/es/gpus/h20-96gb "
            "and zangshuxian.com/new/674733024499207168 (read 2026-12-01): 96 GB HBM3, 4.0 TB/s, FP16/BF16 148 "
            "TFLOP/s dense, INT8 296 TOPS, NVLink 900 GB/s both directions (450 one way), 400 W. No FP8 figure "
            "in those sources: fp8 runs at the bf16 rate here (Hopper's FP8 usually equals its INT8 rate: "
            "pass --hardware-config to model that); collective floor as h100-sxm (assumption)",
        ),
        _hw(
            id="tpu-v5e",
            name="Google Cloud TPU v5e",
            memory_bytes=16e9,
            memory_bandwidth_bytes_per_s=819e9,
            bf16_flops_per_s=197e12,
            scaleup_link_bytes_per_s=200e9,
            scaleup_topology="torus",
            collective_latency_ms=0.001,
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for JetStream / "
            "vLLM on TPU against TensorRT-LLM (assumption)",
            source="Google Cloud TPU v5e page, docs.cloud.google.com/tpu/docs/v5e (read 2026-12-01): 197 TFLOP/s bf16 "
            "(393 int8 TOPS, no fp8), 16 GB HBM2 (one version of the page says 16 GiB: the smaller is used), "
            "819 GB/s, inter-chip interconnect 400 GB/s per chip both directions over 4 ports (200 GB/s one "
            "way), 8 chips per host, 2D torus; 1 us small-message floor from jax-ml/scaling-book "
            f"({_SPECS})",
        ),
        _hw(
            id="tpu-v6e",
            name="Google Cloud TPU v6e (Trillium)",
            memory_bytes=32e9,
            memory_bandwidth_bytes_per_s=1638e9,
            bf16_flops_per_s=918e12,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="torus",
            collective_latency_ms=0.001,
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for JetStream / "
            "vLLM on TPU against TensorRT-LLM (assumption)",
            source="Google Cloud TPU v6e page, docs.cloud.google.com/tpu/docs/v6e (read 2026-12-01): 918 TFLOP/s bf16 "
            "(1,836 int8 TOPS, no fp8), 32 GB HBM, 1,638 GB/s, inter-chip interconnect 800 GB/s per chip both "
            "directions over 4 ports (400 GB/s one way), 8 chips per host, 2D torus; 1 us small-message floor "
            f"from jax-ml/scaling-book ({_SPECS})",
        ),
        _hw(
            id="trainium2",
            name="AWS Trainium2",
            memory_bytes=96 * 2**30,
            memory_bandwidth_bytes_per_s=2.9e12,
            bf16_flops_per_s=667e12,
            fp8_flops_per_s=1299e12,
            scaleup_link_bytes_per_s=640e9,
            scaleup_topology="torus",
            max_tensor_parallel=16,
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for the Neuron SDK "
            "(NxD Inference) against TensorRT-LLM (assumption)",
            source="AWS Neuron documentation, Trainium2 architecture (aws-neuron/aws-neuron-sdk "
            "about-neuron/arch/neuron-hardware/trainium2.rst, read 2026-12-01): 667 BF16/FP16 and 1,299 FP8 "
            "TFLOP/s dense (2,563 sparse), 96 GiB HBM at 2.9 TB/s, NeuronLink-v3 1.28 TB/s per chip (taken as "
            "both directions: 640 GB/s one way, assumption); 16 chips per Trn2 instance as the largest "
            "tensor-parallel group (assumption); collective floor as h100-sxm (assumption)",
        ),
        _hw(
            id="gaudi3",
            name="Intel Gaudi 3",
            memory_bytes=128e9,
            memory_bandwidth_bytes_per_s=3.67e12,
            bf16_flops_per_s=1835e12,
            fp8_flops_per_s=1835e12,
            scaleup_link_bytes_per_s=600e9,
            scaleup_topology="ethernet",
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for the Intel Gaudi "
            "software stack (vLLM / Optimum Habana) against TensorRT-LLM (assumption)",
            source="Intel, 'Intel Gaudi 3 AI Accelerator: Architected for Gen AI Training and Inference' (Hot Chips "
            "2024, R. Kaplan), spec table as reproduced at sgpjbg.com/baogao/465025.html (read 2026-12-01): "
            "BF16 and FP8 matrix 1,835 TFLOP/s, 128 GB HBM2e, 3.67 TB/s, 24 x 200 GbE RoCE = 1,200 GB/s both "
            "directions (600 GB/s one way; all 8 cards of a node joined directly, modelled as one group of 8), "
            "PCIe Gen5 x16; collective floor as h100-sxm (assumption: RoCE is likely slower)",
        ),
        _hw(
            id="wse-3",
            name="Cerebras WSE-3 (CS-3)",
            memory_kind="sram",
            memory_bytes=44e9,
            memory_bandwidth_bytes_per_s=21e15,
            bf16_flops_per_s=125e15,
            scaleup_link_bytes_per_s=150e9,
            collective_latency_ms=0.0,
            max_tensor_parallel=1,
            sram=SramTiming(
                tau_layer_ms=0.003075,
                tau_hop_ms=0.002,
                tau_step_ms=0.2775,
                usable_sram_fraction=0.9,
                generation="2025-05",
                includes_speculative=True,
                software="Cerebras Inference as its 2025 model pages and announcements give it (Qwen3-32B ~2,100 "
                "tok/s, Llama 4 Maverick over 2,500 tok/s in May 2025): newer kernels on top of the 2024-11 "
                "release, which already 'implements speculative decoding', so these figures are taken to include it",
                source="2024-11 with the per-layer and per-step times x 0.75, solved from Cerebras' Qwen3-32B model "
                "page, Speed ~2100 tokens/sec (inference-docs.cerebras.ai/models/qwen-3-32b, read 2026-12-02; 2 "
                "wafers at bf16, 1000 in / 500 out assumed); the wafer-to-wafer hop kept (no source separates it); "
                "checked, not fitted, on Llama 4 Maverick >2,500 tok/s (Cerebras, May 2025) and Artificial "
                "Analysis' 2,314 tok/s for Llama 3.3 70B (tests/data/inference-measurements.csv C1, C3)",
            ),
            sram_history=(
                SramTiming(
                    tau_layer_ms=0.0041,
                    tau_hop_ms=0.002,
                    tau_step_ms=0.37,
                    usable_sram_fraction=0.9,
                    generation="2024-11",
                    includes_speculative=True,
                    software="Cerebras Inference from the Oct/Nov 2024 update on (Llama-3.1-405B at 969 tok/s across "
                    "21 wafers, Nov 2024; Qwen3-235B ~1,450 tok/s, 2025); that release 'implements speculative "
                    "decoding' (Cerebras' Oct 2024 release notes as quoted in news.ycombinator.com item 41942822, "
                    "read 2026-12-01), so the figures it was fitted to are taken to include it",
                    source="tau_layer and tau_step fitted (minimax relative error) to Cerebras Llama-3.1-8B 1800 "
                    "tok/s (blog, Aug 2024), Llama-3.1-405B 969 tok/s (2024-11-20), Qwen3-235B 1450 tok/s (models "
                    "page); tau_hop assumption: one 100GbE switch + NIC hop ~2 us for a 32 KB activation; "
                    "usable SRAM 90% (assumption: the rest holds activations and code)",
                ),
                SramTiming(
                    tau_layer_ms=0.0041,
                    tau_hop_ms=0.51,
                    tau_step_ms=0.37,
                    usable_sram_fraction=0.9,
                    generation="2024-08",
                    software="Cerebras Inference at launch (Aug 2024): Llama-3.1-8B ~1,800 and Llama-3.1-70B ~450 "
                    "tok/s; wafer-to-wafer I/O not yet overlapped with compute",
                    source="tau_layer, tau_step and usable SRAM as 2024-11 (the single-wafer Llama-3.1-8B 1800 tok/s "
                    "of Aug 2024 fixed them); tau_hop 0.51 ms solved from Artificial Analysis' launch-day "
                    "measurement of Llama-3.1-70B on Cerebras, >446 output tok/s on 4 wafers (as quoted by "
                    "williamspurlock.com/blog/cerebras-inference-launch-llama-3-1-august-2024, read "
                    "2026-12-01); what changed: Cerebras' Oct 2024 release notes say the first implementation "
                    "used a fraction of the wafer's I/O capacity and that wafer I/O now runs asynchronously "
                    "from compute (quoted in news.ycombinator.com item 41942822, read 2026-12-01); 70B reached "
                    "2,148 tok/s after it (danielkim.sh/blog/how-is-cerebras-so-fast, read 2026-12-01)",
                ),
            ),
            hosted=HostedPath(
                provider="Cerebras Inference API",
                overhead_p50_ms=239.0,
                overhead_p95_ms=558.0,
                source="p50: Cerebras' TTFT of 0.24 s for Llama-3.1-405B (vendor figure, Tom's Hardware 2024-11-20, "
                "read 2026-12-01) minus the model's ~1 ms chip-time TTFT; p95: p50 x 2.33, the p95/p50 ratio "
                "of TTFT measured for the other SRAM-chip hosts (Groq 120/280 ms, SambaNova 150/350 ms; "
                "tokenmix.ai/blog/ai-api-latency-benchmark, 10,000+ requests, April 2026, read 2026-12-01); "
                "assumption: Cerebras' tail is alike (no Cerebras p95 is published)",
            ),
            source="Cerebras WSE-3 launch (Mar 2024): 44 GB SRAM, 21 PB/s, 125 PFLOP/s peak AI compute (used as the "
            "prefill peak; dense figure not published); CS-3 I/O 1.2 Tb/s (12x100 GbE)",
        ),
        _hw(
            id="groq-lpu",
            name="Groq LPU (TSP v1)",
            memory_kind="sram",
            memory_bytes=0.23e9,
            memory_bandwidth_bytes_per_s=80e12,
            bf16_flops_per_s=188e12,
            scaleup_link_bytes_per_s=512e9,
            collective_latency_ms=0.0,
            max_tensor_parallel=1,
            sram=SramTiming(
                tau_layer_ms=0.0,
                tau_hop_ms=0.00108,
                tau_step_ms=1.12,
                usable_sram_fraction=1.0,
                generation="2026-05",
                software="GroqCloud as its pricing page gives the speeds in May 2026 (llama-3.3-70b-versatile 560, "
                "llama-3.1-8b-instant 840, gpt-oss-20b 1,000 tok/s); speculative decoding not stated for these "
                "endpoints and taken as absent (Groq served it as separate '-specdec' models in 2024); "
                "third-party API measurements of 2026 are slower (Llama-3.3-70B ~270 tok/s, "
                "neuraplus-ai.github.io, 2026-04-09): pick 2024-02 for those",
                source="2024-02 with the chip-to-chip hop x 0.29, solved from Groq's llama-3.3-70b-versatile at 560 "
                "tok/s (groq.com/pricing TPS column, May 2026, as quoted by hivebook.wiki, read 2026-12-02; 617 "
                "chips at bf16, 1000 in / 500 out assumed); the per-step time kept; checked, not fitted, on "
                "Llama-3.1-8B 840 and gpt-oss-20b 1,000 tok/s of the same page (inference-measurements.csv Q1, Q3)",
            ),
            sram_history=(
                SramTiming(
                    tau_layer_ms=0.0,
                    tau_hop_ms=0.0037,
                    tau_step_ms=1.12,
                    usable_sram_fraction=1.0,
                    generation="2024-02",
                    software="GroqCloud as of Feb 2024 (Llama-2 at 750 / 300 tok/s), without speculative decoding",
                    source="tau_hop and tau_step solved from two Groq figures of one source (TechPowerUp, Feb 2024): "
                    "Llama-2-7B 750 tok/s (2048 context) and Llama-2-70B 300 tok/s (4096 context), bf16 weights; "
                    "per-layer time folded into the chip-to-chip hops (the LPU pipeline is hop-dominated)",
                ),
            ),
            hosted=HostedPath(
                provider="GroqCloud API",
                overhead_p50_ms=114.0,
                overhead_p95_ms=274.0,
                source="GroqCloud Llama-3.3-70B TTFT p50 120 / p95 280 ms at 2K-token prompts (10,000+ requests from "
                "US East; tokenmix.ai/blog/ai-api-latency-benchmark, April 2026, read 2026-12-01) minus the "
                "model's 6 ms chip-time TTFT at that prompt; consistent with 163 ms warm median via OpenRouter "
                "(krabarena.org, proxy floor subtracted) and ~250 ms for Llama-3.1-70B (Artificial Analysis as "
                "summarised by managedmodels.com, early 2026), both read 2026-12-01",
            ),
            source=f"{_SPECS}: Groq LPU figures (TechPowerUp Feb 2024); Groq ISCA 2022 (220 MiB SRAM, 16 C2C links)",
        ),
    )
}
"""Hardware catalog by id."""


def _m(**kw: object) -> ModelArch:
    return ModelArch.model_validate(kw)


MODELS: dict[str, ModelArch] = {
    m.id: m
    for m in (
        _m(
            id="llama-3.1-8b",
            name="Llama-3.1-8B",
            total_params=8.03e9,
            active_params=8.03e9,
            layers=32,
            d_model=4096,
            q_heads=32,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=131072,
            source="meta-llama/Llama-3.1-8B config.json (max_position_embeddings 131072)",
        ),
        _m(
            id="llama-3.1-70b",
            name="Llama-3.1-70B",
            total_params=70.6e9,
            active_params=70.6e9,
            layers=80,
            d_model=8192,
            q_heads=64,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=131072,
            source="meta-llama/Llama-3.1-70B config.json (max_position_embeddings 131072; "
            "Llama-3.3-70B: same architecture and context)",
        ),
        _m(
            id="llama-3.1-405b",
            name="Llama-3.1-405B",
            total_params=405.9e9,
            active_params=405.9e9,
            layers=126,
            d_model=16384,
            q_heads=128,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=131072,
            source="meta-llama/Llama-3.1-405B config.json (max_position_embeddings 131072)",
        ),
        _m(
            id="llama-2-7b",
            name="Llama-2-7B",
            total_params=6.74e9,
            active_params=6.74e9,
            layers=32,
            d_model=4096,
            q_heads=32,
            kv_heads=32,
            head_dim=128,
            max_context_tokens=4096,
            source="meta-llama/Llama-2-7b-hf config.json (6.74e9 parameters, multi-head attention, "
            "max_position_embeddings 4096)",
        ),
        _m(
            id="llama-2-70b",
            name="Llama-2-70B",
            total_params=69e9,
            active_params=69e9,
            layers=80,
            d_model=8192,
            q_heads=64,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=4096,
            source="meta-llama/Llama-2-70b-hf config.json (max_position_embeddings 4096)",
        ),
        _m(
            id="glm-4.7",
            name="GLM-4.7",
            total_params=358e9,
            active_params=32e9,
            layers=92,
            d_model=5120,
            q_heads=96,
            kv_heads=8,
            head_dim=128,
            experts=160,
            experts_per_token=8,
            moe_layers=89,
            max_context_tokens=202752,
            source="NVIDIA Megatron-Bridge glm45.md; Cerebras GLM-4.7 migration notes (3 dense + 89 MoE layers); "
            "context: zai-org/GLM-4.7 config.json max_position_embeddings 202752 (docs.z.ai GLM-4.7: "
            "200K; deepinfra.com/zai-org/GLM-4.7: 202,752)",
        ),
        _m(
            id="gpt-oss-120b",
            name="gpt-oss-120b",
            total_params=116.8e9,
            active_params=5.1e9,
            layers=36,
            d_model=2880,
            q_heads=64,
            kv_heads=8,
            head_dim=64,
            experts=128,
            experts_per_token=4,
            native_expert_precision="fp4",
            sliding_window=128,
            sliding_layers=18,
            max_context_tokens=131072,
            source="openai/gpt-oss-120b config.json (MXFP4 expert weights; layer_types alternate sliding_attention "
            "and full_attention, sliding_window 128: 18 of 36 layers keep 128 tokens of KV cache, modelled "
            "since 2026-12-01; max_position_embeddings 131072)",
        ),
        _m(
            id="gpt-oss-20b",
            name="gpt-oss-20b",
            total_params=20.91e9,
            active_params=3.61e9,
            layers=24,
            d_model=2880,
            q_heads=64,
            kv_heads=8,
            head_dim=64,
            experts=32,
            experts_per_token=4,
            native_expert_precision="fp4",
            max_context_tokens=131072,
            sliding_window=128,
            sliding_layers=12,
            source="openai/gpt-oss-20b config.json, a verbatim copy in a public repository found with the code "
            "index (file id 31112482743, read 2026-12-01): 24 layers, hidden 2880, 64 query / 8 KV heads of "
            "64, 32 local experts, 4 per token, MXFP4 experts, vocab 201088, untied head, "
            "max_position_embeddings 131072; counted from those fields: 20.91e9 total, 3.61e9 active "
            "without the input embedding table (OpenAI's model card convention, as gpt-oss-120b's 5.1e9); "
            "layer_types alternate sliding (window 128) and full attention: 12 of 24 layers local",
        ),
        _m(
            id="qwen3-235b-a22b",
            name="Qwen3-235B-A22B",
            total_params=235e9,
            active_params=22e9,
            layers=94,
            d_model=4096,
            q_heads=64,
            kv_heads=4,
            head_dim=128,
            experts=128,
            experts_per_token=8,
            max_context_tokens=32768,
            source="Qwen/Qwen3-235B-A22B config.json; context: the model card's native 32,768 tokens "
            "(131,072 needs YaRN rope scaling, off by default: define the model inline to use it)",
        ),
        _m(
            id="mixtral-8x7b",
            name="Mixtral-8x7B",
            total_params=46.7e9,
            active_params=12.9e9,
            layers=32,
            d_model=4096,
            q_heads=32,
            kv_heads=8,
            head_dim=128,
            experts=8,
            experts_per_token=2,
            max_context_tokens=32768,
            source="mistralai/Mixtral-8x7B-v0.1 config.json (32 layers, hidden 4096, 32 heads, 8 KV heads, 8 local "
            "experts, 2 per token, max_position_embeddings 32768); 46.7B total / 12.9B active from the "
            "Mistral AI release post (2023-12-11)",
        ),
    )
}
"""Model-architecture catalog by id."""

_HF = (
    "config.json fields as published on huggingface.co/{repo} (max_position_embeddings {ctx}; from memory of the "
    "release; parameters counted from them reproduce the model card's {total} total{extra})"
)
_HF_MODELS: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    (
        "qwen2.5-7b",
        "Qwen2.5-7B",
        "Qwen/Qwen2.5-7B-Instruct",
        "7.6B; checked against a public copy of the file, read 2026-11-30",
        {
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
            "max_position_embeddings": 32768,
        },
    ),
    (
        "qwen2.5-72b",
        "Qwen2.5-72B",
        "Qwen/Qwen2.5-72B-Instruct",
        "72.7B",
        {
            "hidden_size": 8192,
            "intermediate_size": 29568,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
            "max_position_embeddings": 32768,
        },
    ),
    (
        "qwen3-8b",
        "Qwen3-8B",
        "Qwen/Qwen3-8B",
        "8.2B; re-read 2026-12-01 against public copies (code index ids "
        "58026833216, 1570491832; the latter adds YaRN rope_scaling to 131072, not in the release): no field changed",
        {
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "max_position_embeddings": 40960,
        },
    ),
    (
        "qwen3-32b",
        "Qwen3-32B",
        "Qwen/Qwen3-32B",
        "32.8B",
        {
            "hidden_size": 5120,
            "intermediate_size": 25600,
            "num_hidden_layers": 64,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "max_position_embeddings": 40960,
        },
    ),
    (
        "qwen3-30b-a3b",
        "Qwen3-30B-A3B",
        "Qwen/Qwen3-30B-A3B",
        "30.5B (3.3B active)",
        {
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "moe_intermediate_size": 768,
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "num_experts": 128,
            "num_experts_per_tok": 8,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "max_position_embeddings": 40960,
        },
    ),
    (
        "llama-3.2-1b",
        "Llama-3.2-1B",
        "meta-llama/Llama-3.2-1B",
        "1.24B; re-read 2026-12-01 against public copies of "
        "the Instruct config (code index ids 10911396249, 58720427815): head_dim 64, tie_word_embeddings true (the "
        "output head is the embedding table, counted once), no field changed",
        {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "vocab_size": 128256,
            "tie_word_embeddings": True,
            "max_position_embeddings": 131072,
        },
    ),
    (
        "llama-3.2-3b",
        "Llama-3.2-3B",
        "meta-llama/Llama-3.2-3B",
        "3.21B; re-read 2026-12-01 against public copies "
        "(code index ids 2750760194, 31940328998): 24 query / 8 KV heads of 128, tie_word_embeddings true, no field "
        "changed",
        {
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "num_hidden_layers": 28,
            "num_attention_heads": 24,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
            "tie_word_embeddings": True,
            "max_position_embeddings": 131072,
        },
    ),
    (
        "mistral-7b",
        "Mistral-7B",
        "mistralai/Mistral-7B-v0.3",
        "7.25B; v0.3 since 2026-12-01 (was v0.1; v0.3's "
        "fields checked against a public copy, code index id 55623910263): vocab 32768, rope_theta 1e6 and "
        "sliding_window null, so every layer attends to the whole context and the KV cache is "
        "exact; v0.1 (vocab 32000) attends within a 4096-token sliding window, which this count would over-state "
        "beyond 4K tokens",
        {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32768,
            "tie_word_embeddings": False,
            "max_position_embeddings": 32768,
        },
    ),
    (
        "gemma-3-27b",
        "Gemma-3-27B",
        "google/gemma-3-27b-it (text_config)",
        "27B; re-read 2026-12-01 against a "
        "public copy of the 27B text_config (TensorRT-LLM's test config, code index id 926331895, layers cut to 6 "
        "there; 62 in the release): sliding_window 1024 with sliding_window_pattern 6, so 52 of the 62 layers are "
        "local (every 6th global) and keep only 1024 tokens of KV cache (modelled since 2026-12-01; it was counted "
        "as full attention)",
        {
            "hidden_size": 5376,
            "intermediate_size": 21504,
            "num_hidden_layers": 62,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "vocab_size": 262208,
            "tie_word_embeddings": True,
            "max_position_embeddings": 131072,
            "sliding_window": 1024,
            "sliding_window_pattern": 6,
            "model_type": "gemma3_text",
        },
    ),
)
MODELS.update(
    {
        ident: model_from_hf_dict(
            cfg,
            ident=ident,
            name=name,
            source=_HF.format(
                repo=repo,
                ctx=cfg["max_position_embeddings"],
                total=note.split(";")[0].split(" (")[0],
                extra=(";" + note.split(";", 1)[1]) if ";" in note else "",
            ),
        )
        for ident, name, repo, note, cfg in _HF_MODELS
    }
)

_READ = "read 2026-12-01"
_DSV3: dict[str, Any] = {
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "vocab_size": 129280,
    "tie_word_embeddings": False,
    "max_position_embeddings": 163840,
    "model_type": "deepseek_v3",
    "quantization_config": {"quant_method": "fp8"},
    "num_nextn_predict_layers": 1,
}
_DSV3_SRC = (
    "config.json fields (huggingface.co/deepseek-ai/{repo}/blob/main/config.json; {read} from public verbatim copies "
    "found with the code index: DeepSeek-R1's whole file, id 1570491832, and DeepSeek-V3's fields, ids 66504138143 "
    "and 9990193600, the same values): 61 layers (3 dense of 18432, then 58 MoE), hidden 7168, 128 heads with "
    "multi-head latent attention (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 + qk_rope 64, v_head_dim 128), "
    "256 routed experts of 2048 (8 per token) + 1 shared, vocab 129280, fp8 e4m3 weights, max_position_embeddings "
    "163840 (the card says 128K); counted from them: 671.0e9 total, 37.6e9 active (36.6e9 without the input "
    "embedding table) vs the model card's 671B / 37B; the 14B multi-token-prediction module (685B on Hugging Face) "
    "is not counted (github.com/deepseek-ai/DeepSeek-V3 README). KV cache: 512 + 64 elements per token per layer "
    "(arXiv:2412.19437 section 2.1.1)"
)
_LLAMA4: dict[str, Any] = {
    "model_type": "llama4_text",
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_experts_per_tok": 1,
    "vocab_size": 202048,
    "tie_word_embeddings": False,
    "attention_chunk_size": 8192,
}
_LLAMA4_SRC = (
    "text_config of huggingface.co/meta-llama/{repo}/blob/main/config.json ({read} from public copies found "
    "with the code index: Scout's in file ids 41112263523 and 57930777939, Maverick's in TensorRT-LLM's "
    "two-layer test config, id 115210306): 48 layers, hidden 5120, 40 query / 8 KV heads of 128, "
    "{experts} routed experts of 8192 (1 per token) + 1 shared expert of 8192 in {moe}, "
    "{dense}vocab 202048, max_position_embeddings {ctx}; counted: {total} total / 17.2e9 active vs Meta's "
    "model card {card} (the card's total includes the vision encoder, ~0.9e9); chunked local attention "
    "(8192-token chunks on 3 of 4 layers) is counted as full attention in the KV cache"
)
_GLM45: dict[str, Any] = {
    "model_type": "glm4_moe",
    "hidden_size": 5120,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "num_hidden_layers": 92,
    "first_k_dense_replace": 3,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "n_routed_experts": 160,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "vocab_size": 151552,
    "tie_word_embeddings": False,
    "max_position_embeddings": 131072,
    "num_nextn_predict_layers": 1,
}
_GLM_SRC = (
    "config.json fields of huggingface.co/zai-org/{repo} ({read} from public copies found with the code index, "
    "ids 4289690615 and 56711705269 for the GLM-4.5/4.7 shape{extra}): {shape}; counted: {total} total, "
    "{active} active, {noemb} without the embedding tables (the convention of Z.ai's {card}); the "
    "multi-token-prediction layer is not counted"
)
_CONFIG_MODELS: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("deepseek-v3", "DeepSeek-V3", _DSV3, _DSV3_SRC.format(repo="DeepSeek-V3", read=_READ)),
    (
        "deepseek-r1",
        "DeepSeek-R1",
        _DSV3,
        _DSV3_SRC.format(repo="DeepSeek-R1", read=_READ) + "; DeepSeek-R1 is DeepSeek-V3's architecture (its README)",
    ),
    (
        "llama-4-scout",
        "Llama-4-Scout-17B-16E",
        {**_LLAMA4, "num_local_experts": 16, "interleave_moe_layer_step": 1, "max_position_embeddings": 10485760},
        _LLAMA4_SRC.format(
            repo="Llama-4-Scout-17B-16E-Instruct",
            read=_READ,
            experts=16,
            moe="every layer",
            dense="",
            ctx="10485760 (the Instruct release; the base config copies say 262144)",
            total="107.8e9",
            card="109B / 17B",
        ),
    ),
    (
        "llama-4-maverick",
        "Llama-4-Maverick-17B-128E",
        {**_LLAMA4, "num_local_experts": 128, "interleave_moe_layer_step": 2, "max_position_embeddings": 1048576},
        _LLAMA4_SRC.format(
            repo="Llama-4-Maverick-17B-128E-Instruct",
            read=_READ,
            experts=128,
            moe="every second layer (interleave_moe_layer_step 2: 24 MoE layers)",
            dense="24 dense layers of intermediate_size_mlp 16384, ",
            ctx="1048576",
            total="400.7e9",
            card="400B / 17B",
        ),
    ),
    (
        "glm-4.5",
        "GLM-4.5",
        _GLM45,
        _GLM_SRC.format(
            repo="GLM-4.5",
            read=_READ,
            extra="; context 131072 from id 9990193600",
            shape="92 layers (3 dense of 12288, 89 MoE), hidden 5120, 96 query / 8 KV heads of 128, 160 routed experts "
            "of 1536 (8 per token) + 1 shared, vocab 151552, max_position_embeddings 131072",
            total="352.8e9",
            active="33.6e9",
            noemb="32.1e9",
            card="355B / 32B",
        ),
    ),
    (
        "glm-4.6",
        "GLM-4.6",
        {**_GLM45, "max_position_embeddings": 202752},
        _GLM_SRC.format(
            repo="GLM-4.6",
            read=_READ,
            extra="; GLM-4.6's own fields from an annotated copy of zai-org/GLM-4.6's config, "
            "id 2748342403: GLM-4.5's architecture with max_position_embeddings 202752, the 200K context",
            shape="as glm-4.5 (92 layers, 3 dense, hidden 5120, 96/8 heads of 128, 160 x 1536 routed + 1 shared, vocab "
            "151552), context 202752",
            total="352.8e9",
            active="33.6e9",
            noemb="32.1e9",
            card="355B / 32B",
        ),
    ),
    (
        "glm-4.5-air",
        "GLM-4.5-Air",
        {
            **_GLM45,
            "hidden_size": 4096,
            "intermediate_size": 10944,
            "moe_intermediate_size": 1408,
            "num_hidden_layers": 46,
            "first_k_dense_replace": 1,
            "n_routed_experts": 128,
        },
        _GLM_SRC.format(
            repo="GLM-4.5-Air",
            read=_READ,
            extra="; GLM-4.5-Air's from id 54377337437",
            shape="46 layers (1 dense of 10944, 45 MoE), hidden 4096, 96 query / 8 KV heads of 128, 128 routed experts "
            "of 1408 (8 per token) + 1 shared, vocab 151552, max_position_embeddings 131072",
            total="106.9e9",
            active="13.4e9",
            noemb="12.2e9",
            card="106B / 12B",
        ),
    ),
    (
        "llama-3-8b",
        "Llama-3-8B",
        {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "tie_word_embeddings": False,
            "max_position_embeddings": 8192,
        },
        f"huggingface.co/meta-llama/Meta-Llama-3-8B config.json ({_READ} from public copies found with the code "
        "index: the -Instruct file verbatim, id 11169606224, and the base model's fields, id 71581043308): 32 "
        "layers, hidden 4096, 32 query / 8 KV heads, FFN 14336, vocab 128256, untied, max_position_embeddings 8192, "
        "rope_theta 500000, rope_scaling null (Llama-3.1 adds 'llama3' scaling to 131072); counted 8.03e9 as Meta's "
        "model card",
    ),
    (
        "llama-3-70b",
        "Llama-3-70B",
        {
            "hidden_size": 8192,
            "intermediate_size": 28672,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "tie_word_embeddings": False,
            "max_position_embeddings": 8192,
        },
        f"huggingface.co/meta-llama/Meta-Llama-3-70B config.json ({_READ} from a verbatim copy in a public repository "
        "found with the code index, id 4920998294): 80 layers, hidden 8192, 64 query / 8 KV heads, FFN 28672, vocab "
        "128256, untied, max_position_embeddings 8192, rope_theta 500000, rope_scaling null; counted 70.55e9 (Meta's "
        "card: 70B)",
    ),
)
MODELS.update(
    {ident: model_from_hf_dict(cfg, ident=ident, name=name, source=src) for ident, name, cfg, src in _CONFIG_MODELS}
)

MODEL_ALIASES: dict[str, str] = {"llama-3.3-70b": "llama-3.1-70b", "llama-2-7b-hf": "llama-2-7b"}
"""Alternative ids: Llama-3.3-70B has Llama-3.1-70B's architecture (models.csv)."""
