//! The built-in tools: shell, read_file, write_file, patch, search_files.
