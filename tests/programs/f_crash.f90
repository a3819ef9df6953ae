! A Fortran code that crashes on one rank: rank 1 writes through a pointer it never associated (a bug a
! production code can have) after a first reduction; gfortran's runtime catches the SIGSEGV, prints its
! backtrace and dies of it.  Every line starts "r<rank>: ".
program f_crash
  use mpi
  implicit none
  integer :: ierr, rank, total
  integer, pointer :: cells(:) => null()

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (*, '("r",I0,": total ",I0)') rank, total
  flush (6)
  if (rank == 1) then
    call touch(cells, 1000)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  write (*, '("r",I0,": done")') rank
  call MPI_Finalize(ierr)

contains

  subroutine touch(a, n)
    integer, pointer :: a(:)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      a(i) = i
    end do
  end subroutine touch
end program f_crash
