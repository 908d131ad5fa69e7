# An Accelerate script that resumes with map_location, and loads a scheduler state (no tensors) without it.
import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = accelerator.prepare(model, optimizer)
    optimizer.load_state_dict(torch.load("ckpt/optimizer.pt", map_location="cpu"))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    scheduler.load_state_dict(torch.load("ckpt/scheduler.pt"))
    if torch.cuda.is_available():
        accelerator.print("cuda")


if __name__ == "__main__":
    main()
