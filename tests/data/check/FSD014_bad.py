import torch.distributed as dist


def main():
    dist.init_process_group("gloo")  # <- FSD014
    dist.barrier()


if __name__ == "__main__":
    main()
