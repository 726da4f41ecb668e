//! kiln-frontend
