"""Batch normalisation over the global batch, on CPU (gloo) as well as GPU.

``torch.nn.SyncBatchNorm`` only runs on accelerators; :class:`ElasticSyncBatchNorm`
computes the batch statistics over all learners' samples with two all-reduces in the
forward pass (sum, then sum of squared deviations) and one in the backward pass, so a
step at any world size equals a single-process step with ordinary BatchNorm on the whole
global batch (up to float summation order).  With one learner it is plain BatchNorm.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


def _world() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class _SyncBNFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, factor):
        C = x.shape[1]
        dims = [0] + list(range(2, x.dim()))
        shape = [1, C] + [1] * (x.dim() - 2)
        local_n = x.numel() // C if C else 0
        buf = torch.empty(C + 1, dtype=torch.float64, device=x.device)
        buf[:C] = x.sum(dims, dtype=torch.float64)
        buf[C] = float(local_n)
        dist.all_reduce(buf)
        n = float(buf[C].item())
        if n < 2:
            raise ValueError("Expected more than 1 value per channel when training BatchNorm")
        mean64 = buf[:C] / n
        mean = mean64.to(x.dtype)
        d = x - mean.view(shape)
        sq = (d * d).sum(dims, dtype=torch.float64)
        dist.all_reduce(sq)
        var64 = sq / n
        invstd = torch.rsqrt(var64 + eps).to(x.dtype)
        xhat = d * invstd.view(shape)
        y = xhat
        if weight is not None:
            y = y * weight.view(shape)
        if bias is not None:
            y = y + bias.view(shape)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - factor).add_(mean64.to(running_mean.dtype), alpha=factor)
                running_var.mul_(1 - factor).add_((var64 * n / (n - 1)).to(running_var.dtype), alpha=factor)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.n = n
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx, dy):
        xhat, invstd, weight = ctx.saved_tensors
        C = xhat.shape[1]
        dims = [0] + list(range(2, xhat.dim()))
        shape = [1, C] + [1] * (xhat.dim() - 2)
        dy = dy.contiguous()
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * xhat).sum(dims)
        grad_w = sum_dy_xhat.clone() if weight is not None else None
        grad_b = sum_dy.clone() if ctx.has_bias else None
        g = torch.cat([sum_dy, sum_dy_xhat]).to(torch.float64)
        dist.all_reduce(g)
        n = ctx.n
        m_dy = (g[:C] / n).to(dy.dtype).view(shape)
        m_dy_xhat = (g[C:] / n).to(dy.dtype).view(shape)
        scale = invstd if weight is None else invstd * weight
        dx = scale.view(shape) * (dy - m_dy - xhat * m_dy_xhat)
        return dx, grad_w, grad_b, None, None, None, None


class ElasticSyncBatchNorm(_BatchNorm):
    """BatchNorm whose training-mode statistics span every learner of the current process
    group (any input rank >= 2, CPU or GPU)."""

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if not (self.training and _world() > 1):
            return super().forward(input)
        factor = 0.0
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        rm = self.running_mean if self.track_running_stats else None
        rv = self.running_var if self.track_running_stats else None
        return _SyncBNFunction.apply(input, self.weight, self.bias, rm, rv, self.eps, factor)


def convert_sync_batchnorm(module: nn.Module, device_type: str = "cpu") -> nn.Module:
    """Replace every BatchNorm*d in ``module`` by a synchronised one that shares the same
    parameters and buffers (so optimizer references stay valid).  On CUDA the stock
    ``torch.nn.SyncBatchNorm`` is used."""
    if device_type == "cuda":
        return nn.SyncBatchNorm.convert_sync_batchnorm(module)
    if isinstance(module, _BatchNorm) and not isinstance(module, (ElasticSyncBatchNorm, nn.SyncBatchNorm)):
        new = ElasticSyncBatchNorm(module.num_features, module.eps, module.momentum,
                                   module.affine, module.track_running_stats)
        if module.affine:
            new.weight = module.weight
            new.bias = module.bias
        new.running_mean = module.running_mean
        new.running_var = module.running_var
        new.num_batches_tracked = module.num_batches_tracked
        new.train(module.training)
        return new
    for name, child in list(module.named_children()):
        new_child = convert_sync_batchnorm(child, device_type)
        if new_child is not child:
            setattr(module, name, new_child)
    return module
