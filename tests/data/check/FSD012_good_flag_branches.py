# llama-cookbook's train loop: the model is FSDP-wrapped only when enable_fsdp; the else arm of the same flag (and of
# an `if` whose other arm clips through the root module) is the plain-module path.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def setup(model, train_config):
    if train_config.enable_fsdp:
        model = FSDP(model)
    return model


def train(model, loader, optimizer, train_config, use_root_clip):
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        if train_config.enable_fsdp:
            model.clip_grad_norm_(train_config.gradient_clipping_threshold)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), train_config.gradient_clipping_threshold)
        if use_root_clip:
            model.clip_grad_norm_(1.0)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()


def main(model, loader, optimizer, train_config):
    model = setup(model, train_config)
    train(model, loader, optimizer, train_config, True)
