"""Adjusters, framework-free: signals, the generic rule, the registry's directions and bounds,
the declarative spec.  Expected values are worked out by hand in the comments."""

import math
import subprocess
import sys

import numpy as np
import pytest

from note_rl import LambdaCallback
from note_rl.adjusters import (EMA, ESSAdjuster, GNSAdjuster, REGISTRY, AdjusterError, Rule,
                               WindowAdjuster, ess_from_weights, gradient_variance, make_adjuster,
                               noise_from_gradients)
from note_rl.buffers import PrioritizedReplayBuffer
from note_rl.core.settings import TrainSettings
from note_rl.policy import EpsGreedyQPolicy


# -- a stand-in agent: every adjustable hyperparameter, a dict "optimizer" ----------------------
class FakeBackend:
    def get_hparam(self, opt, name):
        return opt.get(name)

    def set_hparam(self, opt, name, value):
        opt[name] = value
        return True

    def optimizer_name(self, opt):
        return "fake"


class FakeTrainer:
    def __init__(self):
        self.settings = TrainSettings(num_store=4)


class FakeBuffer:
    """Prioritized-buffer surface the window and ESS code uses: ``weights(segment)``."""

    def __init__(self, segments):
        self.segments = [np.asarray(w, dtype=float) for w in segments]
        self.n_segments = len(segments)
        self.alpha = 0.7
        self.beta = 0.4

    def weights(self, segment=None):
        return self.segments[segment] if segment is not None else np.concatenate(self.segments)

    def __len__(self):
        return sum(len(w) for w in self.segments)

    def set_alpha(self, alpha):
        self.alpha = alpha


class FakeAgent:
    # an agent's run context (note_rl.core.run_context.current) under the old name, as RLBase keeps it
    _trainer = property(lambda self: self._run, lambda self, value: setattr(self, "_run", value))

    def __init__(self, buffer=None):
        self.backend = FakeBackend()
        self.optimizer = [{"lr": 1e-3, "weight_decay": 1e-2, "beta1": 0.9, "beta2": 0.99},
                          {"lr": 5e-3, "weight_decay": 1e-2, "beta1": 0.9, "beta2": 0.99}]
        self.policy = EpsGreedyQPolicy(0.1)
        self.batch, self.PR, self.priority_alpha = 64, True, 0.6
        self.update_batches, self.update_steps = None, 10
        self.tau, self.gamma, self.clip, self.beta = 0.5, 0.95, 0.2, 0.4
        self.buffer = buffer if buffer is not None else FakeBuffer([np.ones(1000)])
        self._trainer = FakeTrainer()
        self.batch_counter = self.step_counter = 0
        self.reports = []

    def _report_adjust(self, logs):
        self.reports.append(dict(logs))


# -- signals ---------------------------------------------------------------------------------
def test_ess_of_uniform_weights_is_n_and_of_one_hot_is_1() -> None:
    assert ess_from_weights(np.full(10, 3.0)) == pytest.approx(10.0)
    assert ess_from_weights([0, 0, 5.0, 0]) == pytest.approx(1.0)
    # p = (1/4, 1/4, 1/2): sum p^2 = 3/8 -> ESS 8/3, whatever the scale of w
    assert ess_from_weights([1, 1, 2]) == pytest.approx(8 / 3)
    assert ess_from_weights([10, 10, 20]) == pytest.approx(8 / 3)
    assert ess_from_weights([]) == 0.0


def test_ema_keeps_its_state_between_calls() -> None:
    ema = EMA()
    assert ema.update(10.0, 0.2) == 10.0          # first value as is
    assert ema.update(20.0, 0.2) == pytest.approx(12.0)   # 0.2*20 + 0.8*10
    assert ema.update(0.0, 0.5) == pytest.approx(6.0)
    clone = EMA()
    clone.load_state_dict(ema.state_dict())
    assert clone.update(6.0, 0.3) == pytest.approx(6.0)


def test_gradient_noise_statistics_by_hand() -> None:
    grads = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 0.0]])
    # mean (3, 2); squared deviations per coordinate sum to 8 and 8
    assert gradient_variance(grads, ddof=0) == pytest.approx(8 / 3)   # Note_rl exactly
    est = noise_from_gradients(grads, batch=2)
    assert est.variance == pytest.approx(4.0)                        # ddof=1: 8 / 2
    # small = mean |g|^2 = 55/3, big = |(3, 2)|^2 = 13, B_s = 2, B_b = 6
    assert est.tr_sigma == pytest.approx((55 / 3 - 13) / (1 / 2 - 1 / 6))   # 16
    assert est.grad_sq == pytest.approx((6 * 13 - 2 * 55 / 3) / 4)         # 31/3
    assert est.b_simple == pytest.approx(16 / (31 / 3))


def test_noise_estimators_recover_the_true_values_of_linear_regression() -> None:
    """x ~ N(0, I_D), y = x.w* + N(0, s^2), loss 1/2 (x.w - y)^2 at w = w* + d: the per-example
    gradient is x (x.d - e), so G = d and tr(S) = D (|d|^2 + s^2) + |d|^2 (Gaussian moments)."""
    rng = np.random.default_rng(0)
    dim, sigma, n, batch, k = 10, 1.0, 50_000, 32, 8
    delta = np.full(dim, 1.0 / np.sqrt(dim))                 # |d|^2 = 1
    x = rng.normal(size=(n, dim))
    eps = rng.normal(scale=sigma, size=n)
    per_example = x * (x @ delta - eps)[:, None]             # the pool's gradients
    true_tr = dim * (1.0 + sigma ** 2) + 1.0                  # 21
    true_g2 = 1.0
    sums = np.zeros(3)
    runs = 300
    for _ in range(runs):
        grads = [per_example[rng.choice(n, batch, replace=False)].mean(axis=0) for _ in range(k)]
        est = noise_from_gradients(grads, batch)
        sums += (est.variance, est.tr_sigma, est.grad_sq)
    variance, tr, g2 = sums / runs
    assert variance == pytest.approx(true_tr / (batch * dim), rel=0.1)
    assert tr == pytest.approx(true_tr, rel=0.1)
    assert g2 == pytest.approx(true_g2, rel=0.1)
    assert tr / g2 == pytest.approx(true_tr / true_g2, rel=0.1)   # B_simple = 21


# -- the generic rule ------------------------------------------------------------------------
def _batch_rule(**params):
    return Rule("batch", "batch", 1, params, (1, math.inf), integer=True)


@pytest.mark.parametrize("params, batch, signal, target, upper, expected", [
    ({}, 64, 300, None, 1000, 256),              # b = 300 -> multiple of align=64 below it
    ({}, 64, 10, None, 1000, 64),                # b = 10 -> min 32 -> floor to 0 -> smallest aligned >= min
    ({}, 64, 150, 100, 1000, 64),                # 64 * 1.5 = 96 -> 64
    ({"align": 32}, 64, 150, 100, 1000, 96),
    ({"align": 32, "min": 40}, 64, 10, 100, 1000, 64),    # 6 -> 40 -> 32 < 40: next multiple 64
    ({"align": 32, "max": 200}, 64, 1000, 100, 1000, 192),  # 640 -> 200 -> 192
    ({}, 64, 1000, 100, 300, 256),               # max defaults to the buffer length
    ({"scale": 0.5, "align": 1}, 64, 300, None, 1000, 150),
])
def test_batch_rule_by_hand(params, batch, signal, target, upper, expected) -> None:
    assert _batch_rule(**params).step([batch], signal, target, upper) == [expected]


def test_batch_rule_keeps_its_defaults_from_the_first_call() -> None:
    rule = _batch_rule()
    assert rule.step([64], 300, None, 1000) == [256]
    assert rule.state == {"min": 32, "align": 64}
    assert rule.step([256], 100, None, 1000) == [64]   # align stays 64, not the new batch


def test_batch_never_reaches_zero_or_leaves_its_bounds() -> None:
    rule = _batch_rule(min=16, max=512, align=16)
    for signal in (1e-9, 0.3, 7, 1e3, 1e9):
        (b,) = rule.step([64], signal, 100.0, 10_000)
        assert 16 <= b <= 512 and b % 16 == 0


@pytest.mark.parametrize("params, message", [
    ({"min": 40, "max": 50, "align": 32}, "batch_params: no multiple of align=32 in [40, 50]"),
    ({"max": 20, "align": 32}, "batch_params: no multiple of align=32 in [1, 20]"),
    ({"min": 0}, "batch_params['min'] must be >= 1, got 0"),
    ({"align": 2.5}, "batch_params['align'] must be an integer >= 1, got 2.5"),
])
def test_impossible_batch_params_are_rejected_when_checked(params, message) -> None:
    for build in (lambda: _batch_rule(**params),
                  lambda: make_adjuster({"kind": "ess", "batch_params": params}),
                  lambda: _rl_with_buffer([1.0] * 8).adjust(batch_params=params)):
        with pytest.raises(ValueError) as err:
            build()
        assert str(err.value) == message
    # the nearest possible triples are accepted: 32 in [32, 50], 64 in [40, 64]
    _batch_rule(min=32, max=50, align=32)
    _batch_rule(min=40, max=64, align=32)


@pytest.mark.parametrize("params, batch, signal, target, upper, expected", [
    # Note_rl and the old rule: 64 for a buffer of 20 items; the default max is the buffer length,
    # the default min (64 // 2 = 32) yields to it, and no multiple of align=64 fits: unaligned 20
    ({}, 64, 150, 100, 20, 20),                   # 96 -> 20
    ({}, 64, 300, None, 20, 20),
    ({}, 64, 10, None, 20, 20),                   # 10 -> min(32, 20) = 20
    ({"align": 8}, 64, 150, 100, 20, 20),         # no multiple of 8 in [20, 20]
    ({"align": 8}, 64, 150, 100, 45, 40),         # 96 -> 45 -> 40 (32 and 40 fit in [32, 45])
    ({}, 64, 300, None, 100, 64),                 # 300 -> 100 -> 64 (a multiple fits: aligned)
    # explicit min/max, default align 64 (nothing aligned fits): clipped, never 64
    ({"min": 40, "max": 50}, 64, 150, 100, 1000, 50),   # 96 -> 50 (the old rule gave 64)
    ({"min": 40, "max": 50}, 64, 10, 100, 1000, 40),    # 6 -> 40
    # an explicit min is kept when the buffer is shorter: [40, max(30, 40)] -> 40
    ({"min": 40, "align": 8}, 64, 10, 100, 30, 40),
    ({"min": 1, "align": 1}, 8, 300, None, 0, 1),       # empty buffer: max(1, 0) = 1
])
def test_batch_stays_within_its_bounds_when_defaults_conflict(params, batch, signal, target, upper,
                                                             expected) -> None:
    assert _batch_rule(**params).step([batch], signal, target, upper) == [expected]


def test_every_batch_lies_in_its_effective_bounds() -> None:
    """Sweep: lo <= b <= hi, with hi = max (or the buffer length, raised to an explicit min) and
    lo = min (default batch // 2) lowered to hi; aligned whenever a multiple of align fits."""
    cases = [{}, {"align": 16}, {"min": 20}, {"max": 100}, {"min": 20, "max": 100},
             {"min": 20, "max": 100, "align": 20}, {"min": 33, "max": 40, "align": 7}, {"align": 1}]
    for params in cases:
        for batch in (8, 64, 100):
            for upper in (0, 5, 20, 64, 300):
                for signal, target in ((1e-6, 1.0), (0.5, 1.0), (3.0, 1.0), (1e6, 1.0), (17, None), (1e5, None)):
                    (b,) = _batch_rule(**params).step([batch], signal, target, upper)
                    hi = params.get("max", max(1, upper, params.get("min", 1)))
                    lo = min(params.get("min", max(1, batch // 2)), hi)
                    align = params.get("align", batch)
                    assert lo <= b <= hi, (params, batch, upper, signal, target, b)
                    if -(-lo // align) * align <= hi:
                        assert b % align == 0, (params, batch, upper, signal, target, b)


def test_rate_rule_by_hand() -> None:
    up = Rule("lr", "rate", 1, {"rate": 1e-3, "min": 1e-5, "max": 1e-2})
    # E/T = 2: goal 1e-3 + 1e-3 = 2e-3, smoothed 0.2*1e-3 + 0.8*2e-3
    assert up.step([1e-3], 200, 100) == [pytest.approx(1.8e-3)]
    # E/T = 1/2: goal 5e-4, smoothed 0.2*1e-3 + 0.8*5e-4
    assert up.step([1e-3], 50, 100) == [pytest.approx(6e-4)]
    down = Rule("eps", "rate", -1, {"rate": 0.1, "min": 0.0, "max": 1.0, "smooth": 0.0})
    assert down.step([0.5], 200, 100) == [pytest.approx(0.4)]   # eps + 0.1 * (T - E) / T
    # a value that starts above max is brought inside
    assert Rule("x", "rate", 1, {"rate": 1.0, "min": 0, "max": 0.1}).step([0.5], 1, 1) == [0.1]


def test_scale_rule_keeps_fractions_for_integer_values() -> None:
    rule = Rule("freq", "scale", 1, {"scale": 1.0, "min": 1, "max": 100}, integer=True)
    assert rule.step([10], 104, 100) == [10]    # 10.4: Note_rl's int() would stay at 10 forever
    assert rule.step([10], 104, 100) == [11]    # 10.816
    assert Rule("f", "scale", -1, {}, integer=True).step([10], 200, 100) == [5]   # T/E * f
    assert Rule("f", "scale", -1, {"min": 8}, integer=True).step([10], 1000, 100) == [8]


def test_integer_rules_round_inside_fractional_bounds() -> None:
    rule = Rule("freq", "scale", -1, {"min": 2.5, "max": 7.5}, (1, math.inf), integer=True)
    # 10 * T / E = 0.1 -> min 2.5; round(2.5) would give 2 < min: the integral bound is 3
    assert rule.step([10], 1000, 10) == [3]
    # 5 * 100 -> max 7.5; round(7.5) would give 8 > max: the integral bound is 7
    assert rule.step([5], 1, 100) == [7]


def test_rule_params_are_validated() -> None:
    with pytest.raises(ValueError, match="needs 'rate'"):
        Rule("lr", "rate", 1, {"min": 0})
    with pytest.raises(ValueError, match=r"^eps_params: no value in \[2, 3\] within the range of eps \[0, 1\]$"):
        ESSAdjuster(target_ess=1.0, params={"eps": {"rate": 0.1, "min": 2, "max": 3}})
    with pytest.raises(ValueError, match=r"^freq_params: no integer in \[2.4, 2.6\]"):
        ESSAdjuster(target_ess=1.0, params={"freq": {"min": 2.4, "max": 2.6}})
    with pytest.raises(ValueError, match="unknown keys"):
        Rule("lr", "rate", 1, {"rate": 1, "sclae": 2})
    with pytest.raises(ValueError, match="min"):
        Rule("lr", "rate", 1, {"rate": 1, "min": 2, "max": 1})


# -- every hyperparameter: direction for E > T and E < T, bounds ------------------------------
_PARAMS = {"batch": {"align": 1, "min": 8, "max": 512}, "freq": {"scale": 1.0, "min": 2, "max": 40},
           "store": {"scale": 1.0, "min": 1, "max": 16}}
_BOUNDS = {"alpha": (0.1, 1.0), "lr": (1e-5, 1e-2), "eps": (0.01, 0.5), "tau": (0.01, 1.0),
           "gamma": (0.9, 0.999), "weight_decay": (0.0, 0.1), "beta1": (0.8, 0.95),
           "beta2": (0.9, 0.999), "clip": (0.05, 0.4), "beta": (0.0, 1.0)}
# Note_rl's reference table: +1 rises when E > T
_ESS_DIRECTION = {"batch": 1, "alpha": 1, "lr": 1, "eps": -1, "freq": -1, "tau": 1, "gamma": 1,
                  "store": -1, "weight_decay": -1, "beta1": 1, "beta2": 1, "clip": 1, "beta": -1}
_NOISE_DIRECTION = {"batch": 1, "alpha": -1, "lr": -1, "eps": 1, "freq": 1, "tau": -1, "gamma": -1,
                    "weight_decay": 1, "beta1": 1, "beta2": 1, "clip": -1, "beta": 1}


def _params(name):
    if name in _PARAMS:
        return dict(_PARAMS[name])
    lo, hi = _BOUNDS[name]
    return {"rate": (hi - lo) / 4, "min": lo, "max": hi}


def _adjuster(mode, name):
    if mode == "ess":
        return ESSAdjuster(target_ess=100.0, params={name: _params(name)})
    return GNSAdjuster(target_noise=100.0, params={name: _params(name)})


@pytest.mark.parametrize("mode, directions", [("ess", _ESS_DIRECTION), ("noise", _NOISE_DIRECTION)])
def test_each_hyperparameter_moves_in_the_documented_direction(mode, directions) -> None:
    assert set(directions) == set(REGISTRY) - ({"store"} if mode == "noise" else set())
    for name, sign in directions.items():
        for ratio in (2.0, 0.5):
            agent = FakeAgent()
            before = REGISTRY[name].get(agent)
            logs = _adjuster(mode, name).apply(agent, 100.0 * ratio, 100.0)
            after = REGISTRY[name].get(agent)
            expected = sign if ratio > 1 else -sign
            for b, a in zip(before, after):
                assert np.sign(a - b) == expected, (mode, name, ratio, b, a)
            assert logs, name


@pytest.mark.parametrize("mode, name", [(m, n) for m in ("ess", "noise") for n in sorted(REGISTRY)
                                         if (m, n) != ("noise", "store")])
def test_every_value_stays_within_its_bounds(mode, name) -> None:
    lo, hi = _BOUNDS.get(name, (_PARAMS.get(name, {}).get("min"), _PARAMS.get(name, {}).get("max")))
    agent = FakeAgent()
    adj = _adjuster(mode, name)
    for signal in (1e6, 1e6, 1e-6, 1e-6, 1e6, 0.3, 7e4):
        adj.apply(agent, signal, 100.0)
        for value in REGISTRY[name].get(agent):
            assert lo - 1e-12 <= value <= hi + 1e-12, (name, signal, value)


def test_setters_reach_where_the_loop_reads() -> None:
    agent = FakeAgent()
    adj = ESSAdjuster(target_ess=10.0, params={n: _params(n) for n in ("alpha", "beta", "freq", "store", "lr")})
    logs = adj.apply(agent, 20.0, 10.0)
    assert agent.buffer.alpha == agent.priority_alpha == logs["alpha"]   # priorities refreshed
    assert agent.buffer.beta == agent.beta == logs["beta"]              # IS exponent at sampling
    assert agent.update_steps == logs["freq"] and isinstance(agent.update_steps, int)
    assert agent._trainer.settings.num_store == logs["store"]
    assert logs["lr/0"] == agent.optimizer[0]["lr"] and logs["lr/1"] == agent.optimizer[1]["lr"]
    agent.update_batches = 7                       # update_batches wins when set (Note_rl)
    adj.apply(agent, 20.0, 10.0)
    assert agent.update_batches != 7


def test_eps_changes_on_each_policy_of_a_list() -> None:
    agent = FakeAgent()
    agent.policy = [EpsGreedyQPolicy(0.1), EpsGreedyQPolicy(0.3)]
    logs = ESSAdjuster(target_ess=10.0, params={"eps": _params("eps")}).apply(agent, 5.0, 10.0)
    assert agent.policy[0].eps > 0.1 and agent.policy[1].eps > 0.3
    assert logs == {"eps/0": agent.policy[0].eps, "eps/1": agent.policy[1].eps}


def test_missing_hyperparameters_fail_clearly() -> None:
    agent = FakeAgent()
    agent.tau = None
    with pytest.raises(AdjusterError, match="tau"):
        ESSAdjuster(target_ess=1.0, params={"tau": _params("tau")}).apply(agent, 2.0, 1.0)
    agent._trainer = None
    with pytest.raises(AdjusterError, match="num_store"):
        ESSAdjuster(target_ess=1.0, params={"store": {}}).apply(agent, 2.0, 1.0)


# -- the ESS adjuster and the window rule on weights ---------------------------------------------
def test_ess_adjuster_smooths_with_persistent_state_on_a_prioritized_buffer() -> None:
    buffer = PrioritizedReplayBuffer(100, alpha=1.0)
    buffer.add_batch(np.zeros((4, 2)), np.zeros(4), np.zeros((4, 2)), np.zeros(4), np.zeros(4))
    agent = FakeAgent(buffer)
    adj = ESSAdjuster(params={"batch": {"align": 1, "min": 1}})
    logs = adj.run(agent)                          # 4 equal priorities: ESS 4, batch = ESS
    assert logs["ess"] == pytest.approx(4.0) and logs["ess_ema"] == pytest.approx(4.0)
    assert agent.batch == 4 and agent.reports == [logs]
    buffer.update_priorities(np.arange(4), np.array([3.0, 1.0, 1.0, 1.0]))
    logs = adj.run(agent)                          # p = (1/2, 1/6, 1/6, 1/6): ESS 3
    assert logs["ess"] == pytest.approx(3.0, rel=1e-6)
    assert logs["ess_ema"] == pytest.approx(0.2 * 3 + 0.8 * 4, rel=1e-6)
    assert agent.batch == 4                        # round(EMA 3.8): the batch follows the EMA
    adj.smooth_alpha = 1.0
    adj.run(agent)
    assert agent.batch == 3


def test_ess_rules_use_the_whole_buffer_in_pool_mode() -> None:
    """Two segments: (4, 1, 1, 1, 1) and ten 1s.  Segment ESS 3.2 and 10; the whole buffer: sum 18,
    sum of squares 16 + 4 + 10 = 30, ESS 18^2 / 30 = 10.8.  The rules follow 10.8 (not a segment's
    value, nor their mean 6.6); the segments are reported."""
    agent = FakeAgent(FakeBuffer([[4, 1, 1, 1, 1], np.ones(10)]))
    adj = ESSAdjuster(target_ess=5.4, params={"batch": {"align": 1, "min": 1},
                                              "eps": {"rate": 0.1, "min": 0.0, "max": 1.0, "smooth": 0.0}})
    logs = adj.run(agent)
    assert logs["ess"] == pytest.approx(10.8) and logs["ess_ema"] == pytest.approx(10.8)
    assert logs["ess/0"] == pytest.approx(3.2) and logs["ess/1"] == pytest.approx(10.0)
    assert agent.batch == 15          # round(64 * 10.8 / 5.4) = 128, clipped to the 15 items
    assert agent.policy.eps == pytest.approx(0.0)   # 0.1 + 0.1 * (5.4 - 10.8) / 5.4 = 0.0
    assert adj.ema.value == pytest.approx(10.8)     # per-segment values do not enter the EMA


def test_window_sizes_by_hand() -> None:
    agent = FakeAgent(FakeBuffer([[4, 1, 1, 1, 1], np.ones(10)]))
    win = WindowAdjuster()
    # segment 0: p = (1/2, 1/8 x 4) -> ESS 1 / (1/4 + 4/64) = 3.2, keep 3 of 5: drop 2
    assert win.window(agent, 0) == 2
    assert agent.reports[-1]["window/0"] == 2 and agent.reports[-1]["window_ess/0"] == pytest.approx(3.2)
    # segment 1 has its own EMA: ESS 10, keep clip(10, 1, 9) = 9: drop 1
    assert win.window(agent, 1) == 1
    agent.buffer.segments[0] = np.ones(5)
    # EMA 0.2 * 5 + 0.8 * 3.2 = 3.56, keep 3: drop 2
    assert win.window(agent, 0) == 2
    assert win.emas["0"].value == pytest.approx(3.56)
    assert win.window(agent, 0, scale=0.5) == 4   # EMA 3.848 * 0.5 -> keep 1
    whole = WindowAdjuster(smooth_alpha=1.0)
    assert whole.window(agent) == 15 - 14        # 15 equal weights: keep 14


# -- the declarative form ----------------------------------------------------------------------
def test_make_adjuster_builds_validates_and_round_trips() -> None:
    assert make_adjuster({"kind": "none"}) is None and make_adjuster(None) is None
    spec = {"kind": "gns", "every": 50, "num_samples": 4, "target_noise": 2.0,
            "batch_params": {"min": 16, "max": 256, "align": 16}, "lr_params": {"rate": 1e-4},
            "eps_params": None, "window": {"scale": 2.0}}
    adj = make_adjuster(spec)
    assert isinstance(adj, GNSAdjuster) and adj.every == 50 and adj.active == ("batch", "lr")
    assert adj.window.scale == 2.0 and adj.signal_name == "b_simple"
    assert make_adjuster(adj.spec()).spec() == adj.spec()
    assert make_adjuster({"kind": "gns", "signal": "variance"}).target_noise == 1e-3
    for bad, match in [({"kind": "ess", "target_noise": 1}, "unknown keys"),
                       ({"kind": "ess", "lr_params": {"rate": 1}}, "need a target"),
                       ({"kind": "gns", "store_params": {}}, "noise mode"),
                       ({"kind": "ess", "batch_params": {"aling": 8}}, "unknown keys"),
                       ({"kind": "gnss"}, "kind"), ({"kind": "ess", "every": 0}, "every")]:
        with pytest.raises(ValueError, match=match):
            make_adjuster(bad)


def test_make_adjuster_accepts_an_omegaconf_config() -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"kind": "ess", "every": 5, "target_ess": 100,
                            "batch_params": {"scale": 1.0, "min": None, "max": None, "align": None},
                            "lr_params": {"rate": 1e-4, "min": 1e-5, "max": 1e-3, "smooth": 0.2}})
    adj = make_adjuster(cfg)
    assert isinstance(adj, ESSAdjuster) and adj.target_ess == 100 and adj.active == ("batch", "lr")


def test_adjuster_state_round_trips() -> None:
    agent = FakeAgent()
    adj = make_adjuster({"kind": "ess", "target_ess": 100, "freq_params": {"min": 1, "max": 99}})
    adj.apply(agent, 104.0, 100.0)
    adj.ema.update(3.0, 0.2)
    clone = make_adjuster(adj.spec())
    clone.load_state_dict(adj.state_dict())
    assert clone.state_dict() == adj.state_dict()
    assert clone.rules["freq"].state == {"value": [pytest.approx(10 * 1 / 1.04)]}


def test_importing_the_adjusters_imports_no_framework() -> None:
    code = ("import sys, note_rl.adjusters, note_rl.core.base\n"
            "print(','.join(m for m in ('torch', 'tensorflow', 'keras') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# -- Note_rl's method names on the base class (framework-free parts) ------------------------------
def _rl_with_buffer(priorities):
    from note_rl.core.base import RLBase

    agent = RLBase()
    agent.set(PR=True, batch=4, alpha=1.0)
    agent.buffer = agent.make_buffer()
    n = len(priorities)
    agent.buffer.add_batch(np.zeros((n, 2)), np.zeros(n), np.zeros((n, 2)), np.zeros(n), np.zeros(n))
    agent.buffer.update_priorities(np.arange(n), np.asarray(priorities, dtype=float))
    return agent


def test_note_rl_methods_keep_their_ema_between_calls() -> None:
    agent = _rl_with_buffer([1.0] * 8)
    reports = []
    agent.callbacks = [LambdaCallback(on_adjust=reports.append)]
    assert agent.compute_ess_from_weights([1, 1, 2]) == pytest.approx(8 / 3)
    assert agent.compute_ess() == pytest.approx(8.0, rel=1e-6)
    params = {"scale": 1.0, "min": None, "max": None, "align": None}
    logs = agent.adjust(batch_params=params)           # ESS mode, batch = ESS (8) -> multiple of 4
    assert logs["ess_ema"] == pytest.approx(8.0, rel=1e-6) and agent.batch == 8
    agent.buffer.update_priorities(np.arange(8), np.array([7.0] + [1.0] * 7))
    logs = agent.adjust(batch_params=params)           # p = (1/2, 1/14 x 7): ESS 1 / (1/4 + 7/196) = 3.5
    assert logs["ess"] == pytest.approx(3.5, rel=1e-6)
    assert logs["ess_ema"] == pytest.approx(0.2 * 3.5 + 0.8 * 8, rel=1e-6)   # 7.1, remembered
    assert agent.batch == 4                            # 7 -> floor to align 4; min 2 -> 4
    assert len(reports) == 2 and reports[-1] == logs   # outside train(): agent.callbacks
    assert agent.adjust_window_size() == 8 - 3        # EMA 3.5 (a fresh per-segment EMA): keep 3
    assert agent.adjust_window_size(ema=6.0) == 8 - 6  # Note_rl 000's pre-computed EMA: keep 6
    assert agent.adjust_window_size() == 8 - 3        # ... which left the adjuster's own EMA alone


def test_note_rl_dispatcher_checks_its_arguments() -> None:
    agent = _rl_with_buffer([1.0] * 8)
    with pytest.raises(ValueError, match="noise mode"):
        agent.adjust(target_noise=1e-3, num_samples=4, store_params={"scale": 1.0})
    with pytest.raises(ValueError, match="need a target"):
        agent.adjust_batch_size(lr_params={"rate": 1e-4})
    with pytest.raises(ValueError, match="signal"):
        agent.adabatch(4, signal="b_simpel")
    with pytest.raises(ValueError, match="smooth"):  # Note_rl 000's name reaches the same check
        agent.adabatch(4, smooth=1.5)


def test_adjust_takes_seed_000s_smooth() -> None:
    """``adjust(smooth=...)`` (000) is ``adjust(smooth_alpha=...)`` (002): the same EMA."""
    params = {"scale": 1.0, "min": None, "max": None, "align": None}
    results = []
    for kwargs in ({"smooth": 0.5}, {"smooth_alpha": 0.5}):
        agent = _rl_with_buffer([1.0] * 8)
        agent.adjust(batch_params=params, **kwargs)  # EMA starts at ESS 8
        agent.buffer.update_priorities(np.arange(8), np.array([7.0] + [1.0] * 7))
        results.append(agent.adjust(batch_params=params, **kwargs)["ess_ema"])
    assert results[0] == results[1] == pytest.approx(0.5 * 3.5 + 0.5 * 8, rel=1e-6)
