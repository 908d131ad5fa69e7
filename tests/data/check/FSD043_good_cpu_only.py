# A gloo job on CPU: what it saved is on the CPU, so torch.load brings it back there on every rank.
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(8, 8)
    model.load_state_dict(torch.load("init.pt"))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
