import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    try:
        dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()


def library_setup():  # a helper in a library module: the script that calls it destroys the group
    dist.init_process_group("gloo")
