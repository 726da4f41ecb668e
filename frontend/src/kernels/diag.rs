//! Errors found in kernel code, with their position, before they name their kernel.

use super::ast::Span;
use crate::error::Error;

/// What kind of error a [`Diag`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DiagKind {
    /// The text is not the grammar's (`Error::KernelSyntax`).
    Syntax,
    /// Well formed but wrong: an unknown name, a type error (`Error::KernelCode`).
    Code,
    /// A construct of C/CUDA outside the subset kiln traces; the message names it
    /// (`Error::KernelUnsupported`).
    Unsupported,
}

/// An error at a position of one of a kernel's code strings.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Diag {
    pub kind: DiagKind,
    pub span: Span,
    pub message: String,
}

impl Diag {
    pub fn new(kind: DiagKind, span: Span, message: impl Into<String>) -> Diag {
        Diag { kind, span, message: message.into() }
    }

    pub fn syntax(span: Span, message: impl Into<String>) -> Diag {
        Diag::new(DiagKind::Syntax, span, message)
    }

    pub fn code(span: Span, message: impl Into<String>) -> Diag {
        Diag::new(DiagKind::Code, span, message)
    }

    /// `construct` is outside the subset.
    pub fn unsupported(span: Span, construct: impl Into<String>) -> Diag {
        Diag::new(DiagKind::Unsupported, span, construct)
    }

    /// The crate's error for kernel `kernel`, the error being in its code string `part`
    /// (`operation`, `map_expr`, `in_params` ...).
    pub fn into_error(self, kernel: &str, part: &str) -> Error {
        let (kernel, part) = (kernel.to_string(), part.to_string());
        let (line, column) = (self.span.line, self.span.column);
        match self.kind {
            DiagKind::Syntax => {
                Error::KernelSyntax { kernel, part, line, column, message: self.message }
            }
            DiagKind::Code => {
                Error::KernelCode { kernel, part, line, column, message: self.message }
            }
            DiagKind::Unsupported => {
                Error::KernelUnsupported { kernel, part, line, column, construct: self.message }
            }
        }
    }
}

pub(crate) type DResult<T> = Result<T, Diag>;
