# The runner's own modules (not for UDFs to import).
