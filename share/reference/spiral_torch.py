#!/usr/bin/env python3
"""PyTorch reference for examples/spiral.c: the same neural ODE on the spiral, in float64, trained by back-propagating
through a hand-written fixed-step RK4 (no torchdiffeq).

  true dynamics  dy/dt = y^3 A, A = [[-0.1, 2], [-2, -0.1]], y(0) = (2, 0); 1000 observations on [0, 25]
                 (RK4 with 20 steps per observation interval, as bin/spiral's PETSc TS)
  model          du/dt = MLP(u^3), MLP = Linear(2, 50), Tanh, Linear(50, 2); weights N(0, 0.1^2), biases 0
  training       each iteration: 20 distinct random windows of 10 consecutive observations, integrated together from
                 their first observation with RK4 at the observation spacing; loss mean |u - y|; RMSprop lr 1e-3
                 with a cosine decay over the iterations (--schedule constant: torchdiffeq's ode_demo.py)
  result         MAE of the learned model's trajectory from y(0) over all 1000 observations, and the training time

Prints one line:  summary: iterations=N schedule=S mae=M train_time_s=T train_cpu_s=C threads=P (wall and CPU seconds,
                  the CPU seconds summed over the threads)
Usage: spiral_torch.py [--iterations N] [--seed S] [--threads P] [--monitor K] [--schedule cosine|constant]"""
import argparse
import time

import numpy as np
import torch

A_TRUE = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]], dtype=torch.float64)


def rk4_step(f, y, h):
    k1 = f(y)
    k2 = f(y + 0.5 * h * k1)
    k3 = f(y + 0.5 * h * k2)
    k4 = f(y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def rk4_trajectory(f, y0, h, nsteps):
    """y0: (batch, 2) -> (nsteps + 1, batch, 2)"""
    ys = [y0]
    for _ in range(nsteps):
        ys.append(rk4_step(f, ys[-1], h))
    return torch.stack(ys)


def generate_data(nobs, tend, substeps=20):
    dt = tend / (nobs - 1)
    f = lambda y: torch.mm(y ** 3, A_TRUE)
    y = torch.tensor([[2.0, 0.0]], dtype=torch.float64)
    data = [y]
    with torch.no_grad():
        for _ in range(nobs - 1):
            for _ in range(substeps):
                y = rk4_step(f, y, dt / substeps)
            data.append(y)
    return torch.cat(data), dt  # (nobs, 2)


class ODEFunc(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(2, 50), torch.nn.Tanh(), torch.nn.Linear(50, 2)).double()
        for m in self.net.modules():
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.normal_(m.weight, mean=0, std=0.1)
                torch.nn.init.constant_(m.bias, val=0)

    def forward(self, y):
        return self.net(y ** 3)


def trajectory_mae(func, data, dt):
    with torch.no_grad():
        pred = rk4_trajectory(func, data[:1], dt, len(data) - 1)[:, 0, :]
        return torch.mean(torch.abs(pred - data)).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--iterations', type=int, default=2000)
    ap.add_argument('--batch', type=int, default=20)
    ap.add_argument('--window', type=int, default=10)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--monitor', type=int, default=0)
    ap.add_argument('--schedule', choices=('cosine', 'constant'), default='cosine')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)

    data, dt = generate_data(1000, 25.0)
    func = ODEFunc()
    opt = torch.optim.RMSprop(func.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.iterations) if a.schedule == 'cosine' else None
    nstarts = len(data) - a.window
    offsets = torch.arange(a.window)

    t0, c0 = time.perf_counter(), time.process_time()
    evaltime = evalcpu = 0.0
    for it in range(a.iterations):
        starts = torch.from_numpy(rng.choice(nstarts, a.batch, replace=False))
        target = data[starts[None, :] + offsets[:, None]]  # (window, batch, 2)
        opt.zero_grad()
        pred = rk4_trajectory(func, target[0], dt, a.window - 1)
        loss = torch.mean(torch.abs(pred - target))
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        if a.monitor and it % a.monitor == 0:
            te, ce = time.perf_counter(), time.process_time()
            print(f'iteration {it:5d}  batch loss {loss.item():.6f}  trajectory mae {trajectory_mae(func, data, dt):.6f}')
            evaltime += time.perf_counter() - te
            evalcpu += time.process_time() - ce
    secs = time.perf_counter() - t0 - evaltime
    cpu = time.process_time() - c0 - evalcpu
    print(f'summary: iterations={a.iterations} schedule={a.schedule} mae={trajectory_mae(func, data, dt):.6f} train_time_s={secs:.3f} train_cpu_s={cpu:.3f} threads={a.threads}')


if __name__ == '__main__':
    main()
