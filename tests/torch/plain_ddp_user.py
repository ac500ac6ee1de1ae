"""A user's plain DDP script written for gloo, as many are: no destroy_process_group() at the
end, so the process groups close at interpreter exit in whatever order the ranks get there. Run
under `zpp-run --cpu` to see a job on zpp end (bench/results/clean_exit_cpu.md).

    ZPP_LOCAL_SIZE=2 tools/zpp-run --cpu --qar=8 -- torchrun --nproc-per-node 4 plain_ddp_user.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
ddp = torch.nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
for step in range(10):
    loss = ddp(torch.randn(32, 256)).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
if dist.get_rank() == 0:
    print(f"loss {loss.item():.6f}")
