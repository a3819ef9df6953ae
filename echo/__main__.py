from echo.cli import mpiecho_entry

mpiecho_entry()
