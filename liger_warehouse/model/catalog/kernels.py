"""Kernel catalog: a human title for each upstream ``kernel_name``.

Titles appear in exported records ("Embedding lookup · liger · full") and dashboards. The
upstream names are benchmark-script identifiers, some with the sweep baked in
(``dyt_beta=True``), so the catalog is explicit rather than derived by string munging.
"""

from __future__ import annotations

from types import MappingProxyType

KERNEL_TITLES: MappingProxyType[str, str] = MappingProxyType(
    {
        "cross_entropy": "Cross-entropy",
        "distill_cosine_loss": "Distillation cosine loss",
        "distill_jsd_loss": "Distillation JSD loss",
        "dpo_loss": "DPO loss",
        "dyt_beta=False": "DyT (beta=False)",
        "dyt_beta=True": "DyT (beta=True)",
        "embedding": "Embedding lookup",
        "fused_add_rms_norm": "Fused add + RMSNorm",
        "fused_linear_cpo_loss": "Fused linear CPO loss",
        "fused_linear_cross_entropy": "Fused linear cross-entropy",
        "fused_linear_grpo_loss_sequence": "Fused linear GRPO loss (sequence-level)",
        "fused_linear_grpo_loss_token": "Fused linear GRPO loss (token-level)",
        "fused_linear_jsd": "Fused linear JSD",
        "fused_linear_orpo_loss": "Fused linear ORPO loss",
        "fused_linear_simpo_loss": "Fused linear SimPO loss",
        "fused_moe": "Fused MoE",
        "fused_neighborhood_attention": "Fused neighborhood attention",
        "geglu": "GeGLU",
        "group_norm": "GroupNorm",
        "jsd": "Jensen-Shannon divergence",
        "kl_div": "KL divergence",
        "kto_loss": "KTO loss",
        "layer_norm": "LayerNorm",
        "llama4_rope": "Llama 4 RoPE",
        "megatron_cross_entropy": "Megatron cross-entropy",
        "multi_token_attention": "Multi-token attention",
        "poly_norm": "PolyNorm",
        "qwen2vl_mrope": "Qwen2-VL M-RoPE",
        "relu_squared": "Squared ReLU",
        "rms_norm": "RMSNorm",
        "rope": "RoPE",
        "softmax": "Softmax",
        "sparse_multi_token_attention": "Sparse multi-token attention",
        "sparsemax": "Sparsemax",
        "swiglu": "SwiGLU",
        "tiled_geglu": "Tiled GeGLU",
        "tiled_swiglu": "Tiled SwiGLU",
        "tvd": "Total variation distance",
    }
)


def kernel_title(kernel_name: str) -> str | None:
    """The human title of an upstream kernel name, or None when it is not catalogued."""
    return KERNEL_TITLES.get(kernel_name)
