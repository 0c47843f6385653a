//! `dimsum._dimsum`, the native half of the Python package `dimsum`: a
//! front-end like the command line. Each call parses its arguments into
//! the library's types (with the same parsers and the same errors as the
//! CLI's flags), runs one of the library's jobs on a worker thread with
//! the GIL released (progress reported to a Python callback, Ctrl-C
//! cancelling the job at its next step), and returns the result as the
//! JSON value `report::json` builds for the CLI's `--json`, converted to
//! Python dicts and lists. The typed classes, `to_pandas()` and tqdm are
//! in the pure-Python half (`python/dimsum/`).

mod calls;
mod observe;
mod study;

use dimsum::error::InputError as Bad;
use dimsum::pipeline::coopt::CooptError;
use dimsum::pipeline::exec::RunError;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

pyo3::create_exception!(
    _dimsum,
    InputError,
    PyValueError,
    "Bad input: a study file, or an argument, that cannot be used. Attributes `file` (str or None: the file, None for an argument), `line` (int or None), `field` (the key or the CLI flag it stands for, e.g. `--bw`) and `message`; str() is the line the CLI prints."
);
pyo3::create_exception!(
    _dimsum,
    DimsumError,
    PyRuntimeError,
    "A run that failed on good input: an infeasible or unbounded optimization, a replay that failed, a file that could not be written."
);

/// Why a call failed, in a form the worker thread can hand back.
#[derive(Debug)]
enum Failure {
    /// Bad input.
    Input(Bad),
    /// The observer cancelled the work (Ctrl-C, or the callback raised).
    Cancelled,
    /// Any other failure, as the CLI prints it.
    Other(String),
}

impl From<Bad> for Failure {
    fn from(e: Bad) -> Failure {
        Failure::Input(e)
    }
}

impl From<RunError> for Failure {
    /// As the CLI's `lift`: bad input stays bad input, as does a
    /// co-optimization with too many candidates (its `[coopt]` section).
    fn from(e: RunError) -> Failure {
        match e {
            RunError::Input(i) => Failure::Input(i),
            RunError::Coopt(c @ CooptError::TooMany { .. }) => Failure::Input(Bad::arg("[coopt]", c.to_string())),
            RunError::Cancelled => Failure::Cancelled,
            other => Failure::Other(other.to_string()),
        }
    }
}

impl From<dimsum::io::WriteError> for Failure {
    fn from(e: dimsum::io::WriteError) -> Failure {
        Failure::Other(e.to_string())
    }
}

impl From<dimsum::report::ReportError> for Failure {
    fn from(e: dimsum::report::ReportError) -> Failure {
        Failure::Other(e.to_string())
    }
}

impl Failure {
    /// The Python exception: `InputError` with its attributes,
    /// `KeyboardInterrupt` for a cancelled call, else `DimsumError`.
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Input(e) => input_error(py, &e),
            Failure::Cancelled => PyKeyboardInterrupt::new_err("cancelled"),
            Failure::Other(m) => DimsumError::new_err(m),
        }
    }
}

/// `e` as a `dimsum.InputError` with `file`, `line`, `field`, `message`.
fn input_error(py: Python<'_>, e: &Bad) -> PyErr {
    let err = InputError::new_err(e.to_string());
    let v = err.value(py);
    let set = || -> PyResult<()> {
        v.setattr("file", e.file.as_ref().map(|f| f.display().to_string()))?;
        v.setattr("line", e.line)?;
        v.setattr("field", &e.field)?;
        v.setattr("message", &e.message)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(other) => other,
    }
}

/// A JSON value as Python: objects as dicts, arrays as lists, integers as
/// int, other numbers as float, `null` as None.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(to_py(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(o) => {
            let dict = PyDict::new(py);
            for (k, x) in o {
                dict.set_item(k, to_py(py, x)?)?;
            }
            dict.into_any()
        }
    })
}

/// The native module.
#[pymodule]
fn _dimsum(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("DimsumError", py.get_type::<DimsumError>())?;
    m.add_class::<study::Study>()?;
    m.add_function(wrap_pyfunction!(calls::run, m)?)?;
    m.add_function(wrap_pyfunction!(calls::collective, m)?)?;
    Ok(())
}
