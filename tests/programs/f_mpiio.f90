! Fortran MPI-IO, `use mpi` style, the way a code writes its restart file: every rank writes its block of a
! shared file at its offset (a file view, 'native'), reads it back, and rank 0 deletes the file at the end; the
! communicator gets a name, the wall time is taken and reduced.  Every line starts "r<rank>: " (tests compare
! them per rank); the last is "r<rank>: done".
program f_mpiio
  use mpi
  implicit none
  integer, parameter :: n = 16
  integer :: ierr, rank, size, fh, i, namelen, sumerr
  integer :: block(n), back(n)
  integer(kind=MPI_OFFSET_KIND) :: disp
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=64) :: path
  double precision :: t0, t1, tmax

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'solver world', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, namelen, ierr)
  write (*, '("r",I0,": world is ",A)') rank, name(1:namelen)
  t0 = MPI_Wtime()

  path = 'restart.dat'
  do i = 1, n
    block(i) = rank * 1000 + i
  end do
  ! a restart from an earlier run may be there: start from none
  if (rank == 0) call MPI_File_delete(trim(path), MPI_INFO_NULL, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_WRONLY, MPI_INFO_NULL, fh, ierr)
  write (*, '("r",I0,": open for writing ",I0)') rank, ierr
  disp = rank * n * 4
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  call MPI_File_write_all(fh, block, n, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call MPI_File_close(fh, ierr)

  call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  write (*, '("r",I0,": open for reading ",I0)') rank, ierr
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  back = 0
  call MPI_File_read_all(fh, back, n, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call MPI_File_close(fh, ierr)
  write (*, '("r",I0,": read back ",I0," ",I0," same ",L1)') rank, back(1), back(n), all(back == block)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call MPI_File_delete(path, MPI_INFO_NULL, ierr)
    write (*, '("r",I0,": delete ",I0)') rank, ierr
  end if
  ! deleted once: opening it again without MPI_MODE_CREATE fails on every rank
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call MPI_Allreduce(merge(1, 0, ierr /= MPI_SUCCESS), sumerr, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (*, '("r",I0,": gone on ",I0," ranks")') rank, sumerr

  t1 = MPI_Wtime() - t0
  call MPI_Reduce(t1, tmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '("r",I0,": timing: ",F8.3," s")') rank, tmax
  write (*, '("r",I0,": done")') rank
  call MPI_Finalize(ierr)
end program f_mpiio
