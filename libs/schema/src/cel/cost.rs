//! Metering of rule evaluation.
//!
//! kube-apiserver stops a rule whose actual cost passes a per-call limit and a request whose
//! rules together pass a runtime budget. The `cel` interpreter counts nothing and cannot be
//! interrupted, so [`program`](super::program) rewrites expressions to report what they do:
//!
//! * each loop iteration calls [`TICK`], which charges the body's node count plus the size of
//!   the item and of the accumulator, which this interpreter copies on every iteration;
//! * field selections, calls and the variables passed to calls go through [`SIZED`], which
//!   charges the size of the value: the interpreter copies selected fields and converts call
//!   arguments, so big values cost in proportion to their size, and a call that makes a huge
//!   value is stopped by the next charge.
//!
//! Sizes count one per value plus one per ten bytes of string (kube-apiserver's string
//! traversal factor). Once the meter runs dry both functions fail, which ends the loop at once;
//! the caller then reports the limit whatever the result was. The charges follow what this
//! interpreter really does, so a rule that copies big values in a loop can run out sooner than
//! in kube-apiserver, whose interpreter shares them.
//!
//! The meter is thread-local: an evaluation runs on one thread from start to end.

use std::cell::Cell;

use kube_cel::cel::objects::Key;
use kube_cel::cel::{self, ExecutionError, FunctionContext, ResolveResult, Value};

/// Cost limit of one rule evaluation (kube-apiserver's `PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// Cost budget of all rules of one validation (kube-apiserver's `RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// Names of the metering functions; `@` keeps them out of reach of rule authors.
pub(super) const TICK: &str = "@kcp.tick";
pub(super) const SIZED: &str = "@kcp.sized";

/// kube-apiserver's text for a rule stopped by its cost limit.
pub(super) const LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// Bytes of string charged as one unit.
const BYTES_PER_UNIT: u64 = 10;

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

fn exceeded() -> ExecutionError {
    ExecutionError::function_error(TICK, LIMIT_EXCEEDED)
}

/// Charges `cost`, or fails the evaluation when it does not fit.
pub(super) fn charge_or_stop(cost: u64) -> Result<(), ExecutionError> {
    if charge(cost) {
        Ok(())
    } else {
        Err(exceeded())
    }
}

/// The size of a string of `len` bytes, in cost units.
pub(super) fn text_weight(len: usize) -> u64 {
    1 + len as u64 / BYTES_PER_UNIT
}

/// The size of a value, in cost units.
pub(super) fn weight(value: &Value) -> u64 {
    let text = text_weight;
    match value {
        Value::String(s) => text(s.len()),
        Value::Bytes(b) => text(b.len()),
        Value::List(items) => 1 + items.iter().map(weight).sum::<u64>(),
        Value::Map(map) => {
            1 + map
                .map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Key::String(s) => text(s.len()),
                        _ => 1,
                    };
                    key + weight(v)
                })
                .sum::<u64>()
        }
        _ => 1,
    }
}

/// `@kcp.tick(cost, step, accumulator, item)`: charges one iteration, then runs its step.
fn tick(ftx: &FunctionContext) -> ResolveResult {
    let arg = |i: usize| {
        ftx.args
            .get(i)
            .ok_or_else(|| ExecutionError::function_error(TICK, "missing argument"))
    };
    let mut cost = match Value::resolve(arg(0)?, ftx.ptx)? {
        Value::Int(n) => u64::try_from(n).unwrap_or(0),
        _ => 0,
    };
    for extra in ftx.args.iter().skip(2) {
        cost = cost.saturating_add(weight(&Value::resolve(extra, ftx.ptx)?));
    }
    if !charge(cost) {
        return Err(exceeded());
    }
    Value::resolve(arg(1)?, ftx.ptx)
}

/// `@kcp.sized(expr)`: evaluates `expr` and charges its size.
fn sized(ftx: &FunctionContext) -> ResolveResult {
    let expr = ftx
        .args
        .first()
        .ok_or_else(|| ExecutionError::function_error(SIZED, "missing argument"))?;
    let value = Value::resolve(expr, ftx.ptx)?;
    if !charge(weight(&value)) {
        return Err(exceeded());
    }
    Ok(value)
}

/// Registers the metering functions in a root context.
pub(super) fn register(ctx: &mut cel::Context<'static>) {
    ctx.add_function(TICK, tick);
    ctx.add_function(SIZED, sized);
}
