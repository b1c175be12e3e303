//! Library functions whose work or output can grow much faster than their input, replaced by
//! versions that charge the meter before they run.
//!
//! Sizing results afterwards (see [`cost`](super::cost)) cannot stop a single call that
//! allocates gigabytes (`lists.range(1000000000)`, a `replace` multiplying a string, a huge
//! `format` precision) or compares every pair of two big lists (`sets.*`, `distinct`). These
//! compute their cost from their arguments, charge it, then do the work: `lists.range` and
//! `replace` here, the others by calling kube-cel's own function.

use std::sync::{Arc, LazyLock};

use kube_cel::KubeCelExt;
use kube_cel::cel::extractors::{Arguments, This};
use kube_cel::cel::{Context, ExecutionError, Program, ResolveResult, Value};

use super::cost;

/// Element comparisons charged as one unit.
const COMPARISONS_PER_UNIT: u64 = 10;

/// Registers the guarded functions over the plain ones in `ctx`.
pub(super) fn register(ctx: &mut Context<'static>) {
    ctx.add_function("lists.range", range);
    ctx.add_function("replace", replace);
    ctx.add_function("format", format);
    ctx.add_function("distinct", distinct);
    ctx.add_function("sets.contains", sets_contains);
    ctx.add_function("sets.intersects", sets_intersects);
    ctx.add_function("sets.equivalent", sets_equivalent);
}

/// kube-cel's functions, unguarded, for the guards to call once they have charged.
static PLAIN: LazyLock<Context<'static>> = LazyLock::new(|| Context::default().with_all());

/// One call of a plain function, on variables `a` and `b`.
struct PlainCall {
    source: &'static str,
    program: LazyLock<Result<Program, String>>,
}

macro_rules! plain_call {
    ($source:literal) => {
        PlainCall {
            source: $source,
            program: LazyLock::new(|| Program::compile($source).map_err(|e| e.to_string())),
        }
    };
}

static FORMAT: PlainCall = plain_call!("a.format(b)");
static DISTINCT: PlainCall = plain_call!("a.distinct()");
static SETS_CONTAINS: PlainCall = plain_call!("sets.contains(a, b)");
static SETS_INTERSECTS: PlainCall = plain_call!("sets.intersects(a, b)");
static SETS_EQUIVALENT: PlainCall = plain_call!("sets.equivalent(a, b)");

impl PlainCall {
    fn run(&self, a: Value, b: Option<Value>) -> ResolveResult {
        let program = self
            .program
            .as_ref()
            .map_err(|e| ExecutionError::function_error(self.source, e))?;
        let mut scope = PLAIN.new_inner_scope();
        scope.add_variable_from_value("a", a);
        if let Some(b) = b {
            scope.add_variable_from_value("b", b);
        }
        program.execute(&scope)
    }
}

/// `lists.range(n)`: charges `n` before making the list.
fn range(n: i64) -> ResolveResult {
    if n < 0 {
        return Err(ExecutionError::function_error(
            "lists.range",
            "range argument must be non-negative",
        ));
    }
    cost::charge_or_stop(n as u64)?;
    Ok(Value::List(Arc::new((0..n).map(Value::Int).collect())))
}

/// `s.replace(old, new[, n])`: charges the result's size before making it. A negative `n`
/// replaces every match, as Go's `strings.Replace` (and so Kubernetes) does.
fn replace(This(this): This<Arc<String>>, Arguments(args): Arguments) -> ResolveResult {
    let text = |i: usize| match args.get(i) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(ExecutionError::function_error(
            "replace",
            "expected string argument",
        )),
    };
    let (from, to) = (text(0)?, text(1)?);
    let limit = match args.get(2) {
        None => None,
        Some(Value::Int(n)) if *n < 0 => None,
        Some(Value::Int(n)) => Some(usize::try_from(*n).unwrap_or(usize::MAX)),
        Some(_) => {
            return Err(ExecutionError::function_error(
                "replace",
                "expected int argument",
            ));
        }
    };
    let matches = this.matches(from.as_str()).count();
    let count = limit.map_or(matches, |n| n.min(matches));
    let length = (this.len() - count * from.len()).saturating_add(count.saturating_mul(to.len()));
    cost::charge_or_stop(cost::text_weight(length))?;
    Ok(Value::String(Arc::new(this.replacen(
        from.as_str(),
        to.as_str(),
        count,
    ))))
}

/// `fmt.format(args)`: charges the precisions asked for (each pads a number with that many
/// digits) before formatting.
fn format(This(fmt): This<Arc<String>>, args: Value) -> ResolveResult {
    let mut digits = 0u64;
    let mut rest = fmt.as_str();
    while let Some(at) = rest.find("%.") {
        rest = &rest[at + 2..];
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        digits = digits.saturating_add(rest[..end].parse::<u64>().unwrap_or(u64::MAX));
    }
    cost::charge_or_stop(cost::text_weight(
        usize::try_from(digits).unwrap_or(usize::MAX),
    ))?;
    FORMAT.run(Value::String(fmt), Some(args))
}

fn comparisons(a: usize, b: usize) -> u64 {
    (a as u64).saturating_mul(b as u64) / COMPARISONS_PER_UNIT
}

/// `l.distinct()`: compares each item with those kept.
fn distinct(This(list): This<Arc<Vec<Value>>>) -> ResolveResult {
    cost::charge_or_stop(comparisons(list.len(), list.len()))?;
    DISTINCT.run(Value::List(list), None)
}

fn sets_contains(a: Arc<Vec<Value>>, b: Arc<Vec<Value>>) -> ResolveResult {
    cost::charge_or_stop(comparisons(a.len(), b.len()))?;
    SETS_CONTAINS.run(Value::List(a), Some(Value::List(b)))
}

fn sets_intersects(a: Arc<Vec<Value>>, b: Arc<Vec<Value>>) -> ResolveResult {
    cost::charge_or_stop(comparisons(a.len(), b.len()))?;
    SETS_INTERSECTS.run(Value::List(a), Some(Value::List(b)))
}

fn sets_equivalent(a: Arc<Vec<Value>>, b: Arc<Vec<Value>>) -> ResolveResult {
    cost::charge_or_stop(comparisons(a.len(), b.len()).saturating_mul(2))?;
    SETS_EQUIVALENT.run(Value::List(a), Some(Value::List(b)))
}
