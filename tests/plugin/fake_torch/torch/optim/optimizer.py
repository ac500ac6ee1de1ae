"""torch.optim.optimizer's global pre- and post-step hooks, as torch 2.x has them."""
_global_pre_hooks = []
_global_post_hooks = []


def register_optimizer_step_pre_hook(hook):
    _global_pre_hooks.append(hook)


def register_optimizer_step_post_hook(hook):
    _global_post_hooks.append(hook)


class Optimizer:
    param_groups = []

    def step(self):
        for hook in _global_pre_hooks:
            hook(self, (), {})
        for hook in _global_post_hooks:
            hook(self, (), {})
