"""An accelerate loop configured for DeepSpeed ZeRO-2 that checkpoints on the main process only. Under DeepSpeed,
``save_state`` runs ``engine.save_checkpoint`` on each process (each writes its optimizer partition, then they meet
in a barrier), so the main process waits for ranks that never come."""

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

    def fit(self, epochs):
        step = 0
        for _ in range(epochs):
            for batch in self.loader:
                loss = self.model(**batch).loss
                self.accelerator.backward(loss)
                self.optimizer.step()
                self.optimizer.zero_grad()
                step += 1
                if self.accelerator.is_main_process and step % 1000 == 0:
                    self.checkpoint(step)  # <- FSD039
