"""The same DeepSpeed accelerate loop done right: every process calls save_state (accelerate writes the shared
files from the main process itself); only the log line is main-process-only."""

import torch
from accelerate import Accelerator
from accelerate.utils import DeepSpeedPlugin


class Runner:
    def __init__(self, model, loader):
        plugin = DeepSpeedPlugin(zero_stage=2)
        self.accelerator = Accelerator(deepspeed_plugin=plugin)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)

    def checkpoint(self, step):
        self.accelerator.save_state(f"ckpt/step-{step}")
        if self.accelerator.is_main_process:
            print(f"saved step {step}")

    def fit(self, epochs):
        step = 0
        for _ in range(epochs):
            for batch in self.loader:
                loss = self.model(**batch).loss
                self.accelerator.backward(loss)
                self.optimizer.step()
                self.optimizer.zero_grad()
                step += 1
                if step % 1000 == 0:
                    self.checkpoint(step)
