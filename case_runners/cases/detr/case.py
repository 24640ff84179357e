"""detr: DETR with a ResNet-50 backbone (transformers' DetrForObjectDetection, nothing pretrained) on COCO 2017;
AdamW with a smaller backbone rate, a step decay, gradient clipping; mAP from pycocotools."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from case_runners.cases.detr.dataset import MEAN, STD, build_datasets, collate
from case_runners.cases.detr.evaluator import STATS, coco_map, detections
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase

TRAINED_STAGES = ("stages.1.", "stages.2.", "stages.3.")  # the backbone's layer2..layer4, as FlagPerf trains them


def detr_config(params: dict[str, Any]) -> Any:
    from transformers import DetrConfig, ResNetConfig

    depths = [int(d) for d in params["depths"]]
    # A ResNet-50 v1.5 (stride in the 3x3 convolution, as torchvision's), its last stage out; out_features: a
    # keyword of the backbone mixin, which ResNetConfig's typed signature leaves out
    backbone = ResNetConfig(  # type: ignore[call-arg]
        num_channels=3, embedding_size=int(params["embedding_size"]), depths=depths,
        hidden_sizes=[int(h) for h in params["hidden_sizes"]], layer_type="bottleneck", hidden_act="relu",
        out_features=[f"stage{len(depths)}"])
    # num_labels: COCO's category ids 1..90 plus 0 (FlagPerf's num_classes 91); "no object" is one more logit
    return DetrConfig(  # type: ignore[call-arg]
        use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
        num_labels=int(params["num_classes"]), num_queries=int(params["num_queries"]),
        d_model=int(params["hidden_dim"]), encoder_layers=int(params["encoder_layers"]),
        decoder_layers=int(params["decoder_layers"]), encoder_ffn_dim=int(params["dim_feedforward"]),
        decoder_ffn_dim=int(params["dim_feedforward"]), encoder_attention_heads=int(params["nheads"]),
        decoder_attention_heads=int(params["nheads"]), dropout=float(params["dropout"]),
        auxiliary_loss=bool(params["aux_loss"]))


class Detr(nn.Module):
    """transformers' DetrForObjectDetection: the Hungarian-matched loss with `labels`, the predictions without."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        from transformers import DetrForObjectDetection

        self.net = DetrForObjectDetection(detr_config(params))
        # transformers freezes a transformers ResNet backbone whole (it looks for "stage.1", its names say
        # "stages.1"); FlagPerf trains layer2..layer4 when lr_backbone > 0, its stem and layer1 frozen.
        train_backbone = float(params["lr_backbone"]) > 0
        for name, weight in self.net.model.backbone.named_parameters():
            weight.requires_grad_(train_backbone and any(s in name for s in TRAINED_STAGES))

    def forward(self, pixel_values: torch.Tensor, pixel_mask: torch.Tensor,
                labels: list[dict[str, torch.Tensor]] | None = None) -> Any:
        return self.net(pixel_values=pixel_values, pixel_mask=pixel_mask, labels=labels)


class DetrCase(TrainingCase):
    target_metric = "mAP"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.max_grad_norm = float(params["max_grad_norm"])
        self.mean = torch.tensor(MEAN, device=ctx.device).view(1, 3, 1, 1) * 255
        self.std = torch.tensor(STD, device=ctx.device).view(1, 3, 1, 1) * 255

    def build_model(self) -> nn.Module:
        return Detr(self.p)

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, val, self.val_coco = build_datasets(ctx.data_dir, p)
        self.train_loader, val_loader = dist.case_loaders(train, val, p, ctx, "training images per epoch",
                                                          collate_fn=collate, eval_collate_fn=collate,
                                                          eval_workers=True)
        return self.train_loader, val_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        """AdamW, the backbone at lr_backbone; the rates drop tenfold every lr_drop epochs (FlagPerf's StepLR),
        after warmup_steps of linear warmup."""
        p = self.p
        trained = [(n, w) for n, w in model.named_parameters() if w.requires_grad]
        groups: list[dict[str, Any]] = [
            {"params": [w for n, w in trained if "backbone" not in n]},
            {"params": [w for n, w in trained if "backbone" in n], "lr": float(p["lr_backbone"])}]
        opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=float(p["lr"]),
                                weight_decay=float(p["weight_decay"]))
        warmup, drop = int(p["warmup_steps"]), int(p["lr_drop"]) * len(self.train_loader)

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            return 0.1 ** (step // drop) if drop else 1.0

        return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def to_device(self, batch: Any, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, list[dict]]:
        """uint8 images to the device, normalised there, the padding zero (as DETR pads normalised images)."""
        images, mask, targets = batch
        mask = mask.to(device, non_blocking=True)
        images = images.to(device, non_blocking=True).float().sub_(self.mean).div_(self.std).mul_(mask[:, None])
        targets = [{k: v.to(device, non_blocking=True) for k, v in t.items()} for t in targets]
        return images, mask, targets

    def train_step(self, model: nn.Module, batch: Any) -> tuple[torch.Tensor, int]:
        images, mask, targets = batch
        return model(images, mask, targets).loss, images.shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """Every rank's detections gathered; COCOeval on rank 0 over the images evaluated, its figures summed to all
        ranks (the others add zeros)."""
        results, image_ids = [], []
        for batch in eval_loader:
            images, mask, targets = self.to_device(batch, self.ctx.device)
            out = model(images, mask)
            ids = [int(t["image_id"]) for t in targets]
            sizes = torch.stack([t["orig_size"] for t in targets])
            results += detections(out.logits, out.pred_boxes, ids, sizes)
            image_ids += ids
        gathered = dist.gather_objects((results, image_ids))
        metrics = {}
        if self.ctx.rank == 0:
            metrics = coco_map(self.val_coco, [r for rs, _ in gathered for r in rs],
                               [i for _, ids in gathered for i in ids])
        values = dist.all_reduce_sum([metrics.get(n, 0.0) for n in STATS], self.ctx.device)
        return dict(zip(STATS, values, strict=True))


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return DetrCase(params, ctx)
