! A Fortran code that refuses to overwrite its output: open(..., status='new') fails if the file exists.
! Usage: f_status_new DIR
program f_status_new
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, u, i, ios
  character(len=512) :: dir, fname
  character(len=256) :: msg
  double precision :: x(16), local, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call get_command_argument(1, dir)
  write(fname, '(a,a,i0,a)') trim(dir), '/energies.', rank, '.out'
  open(newunit=u, file=trim(fname), status='new', action='write', iostat=ios, iomsg=msg)
  if (ios /= 0) then
    write(0, '(a,a)') 'f_status_new: ', trim(msg)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  do i = 1, 16
    x(i) = rank + 0.25d0 * i
  end do
  local = sum(x * x)
  call MPI_Allreduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  write(u, '(a,i0,a,f24.10)') 'rank ', rank, ' local ', local
  write(u, '(a,f24.10)') 'total ', total
  close(u)
  write(*, '(a,i0,a,f24.10)') 'r', rank, ': total ', total
  call MPI_Finalize(ierr)
end program f_status_new
