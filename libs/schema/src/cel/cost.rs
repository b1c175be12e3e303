//! Metering of rule evaluation.
//!
//! kube-apiserver stops a rule whose actual cost passes a per-call limit and a request whose
//! rules together pass a runtime budget. The `cel` interpreter counts nothing and cannot be
//! interrupted, so [`program`](super::program) rewrites every comprehension (the only source of
//! unbounded work) to call [`TICK`] before each iteration. The tick charges the iteration's
//! static cost, plus the accumulator's length for list-building macros (`map`, `filter`), whose
//! every step copies the list in this interpreter. Once the meter runs dry each tick fails,
//! which ends the loop at once; the caller then reports the limit whatever the result was.
//!
//! The meter is thread-local: an evaluation runs on one thread from start to end.

use std::cell::Cell;

use kube_cel::cel::{self, ExecutionError, FunctionContext, Value};

/// Cost limit of one rule evaluation (kube-apiserver's `PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// Cost budget of all rules of one validation (kube-apiserver's `RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// Name of the metering function; `@` keeps it out of reach of rule authors.
pub(super) const TICK: &str = "@kcp.tick";

/// kube-apiserver's text for a rule stopped by its cost limit.
pub(super) const LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

#[derive(Clone, Copy)]
struct Meter {
    remaining: u64,
    spent: u64,
    exceeded: bool,
}

thread_local! {
    static METER: Cell<Option<Meter>> = const { Cell::new(None) };
}

/// What one metered evaluation cost.
pub(super) struct Spent {
    pub cost: u64,
    pub exceeded: bool,
}

/// Runs `eval` with `limit` to spend, after charging `base` (the program's straight-line cost).
pub(super) fn metered<T>(limit: u64, base: u64, eval: impl FnOnce() -> T) -> (T, Spent) {
    let previous = METER.with(|m| {
        m.replace(Some(Meter {
            remaining: limit,
            spent: 0,
            exceeded: false,
        }))
    });
    let _ = charge(base);
    let out = eval();
    let meter = METER.with(|m| m.replace(previous));
    let spent = meter.map_or(
        Spent {
            cost: 0,
            exceeded: false,
        },
        |m| Spent {
            cost: m.spent,
            exceeded: m.exceeded,
        },
    );
    (out, spent)
}

/// Charges `cost`; false (and the meter marked exceeded) when it does not fit.
fn charge(cost: u64) -> bool {
    METER.with(|m| match m.get() {
        // No meter: evaluation outside `metered` is never throttled (not expected to happen).
        None => true,
        Some(mut meter) => {
            let fits = !meter.exceeded && cost <= meter.remaining;
            if fits {
                meter.remaining -= cost;
                meter.spent += cost;
            } else {
                meter.exceeded = true;
                meter.spent += meter.remaining;
                meter.remaining = 0;
            }
            m.set(Some(meter));
            fits
        }
    })
}

/// The [`TICK`] function: `@kcp.tick(cost, loop_condition[, accumulator])`.
pub(super) fn tick(ftx: &FunctionContext) -> Result<Value, ExecutionError> {
    let arg = |i: usize| {
        ftx.args
            .get(i)
            .ok_or_else(|| ExecutionError::function_error(TICK, "missing argument"))
    };
    let mut cost = match Value::resolve(arg(0)?, ftx.ptx)? {
        Value::Int(n) => u64::try_from(n).unwrap_or(0),
        _ => 0,
    };
    if let Some(accumulator) = ftx.args.get(2)
        && let Value::List(list) = Value::resolve(accumulator, ftx.ptx)?
    {
        cost = cost.saturating_add(list.len() as u64);
    }
    if !charge(cost) {
        return Err(ExecutionError::function_error(TICK, LIMIT_EXCEEDED));
    }
    Value::resolve(arg(1)?, ftx.ptx)
}

/// Registers [`TICK`] in a root context.
pub(super) fn register(ctx: &mut cel::Context<'static>) {
    ctx.add_function(TICK, tick);
}
